/** Test doubles for the CLI: IO buffers with TTY flags, a factory over a temp dir, runners. */
import { spawn } from 'node:child_process';
import { mkdtempSync, realpathSync } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { PassThrough } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { main } from '../../cli/app.js';
import type { Env, Factory } from '../../cli/factory.js';
import { nodeFetch } from '../../cli/http.js';
import type { IOStreams, Output } from '../../cli/iostreams.js';
import type { Prompter } from '../../cli/prompt.js';

export const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
export const binPath = path.join(repoRoot, 'dist', 'cli', 'main.js');

export interface TestIO {
  io: IOStreams;
  stdout(): string;
  stderr(): string;
  /** What went through the pager, if one ran. */
  paged(): string | undefined;
}

export function testIO(opts: { tty?: boolean; stdin?: string; pager?: boolean } = {}): TestIO {
  let out = '';
  let err = '';
  let paged: string | undefined;
  const input = new PassThrough();
  if (opts.stdin !== undefined) input.end(opts.stdin);
  else input.end();
  const tty = !!opts.tty;
  const io: IOStreams = {
    in: input,
    out: { write: (s: string) => (out += s) },
    err: { write: (s: string) => (err += s) },
    stdinIsTTY: tty,
    stdoutIsTTY: tty,
    stderrIsTTY: tty,
    ...(tty ? { columns: 100 } : {}),
  };
  if (opts.pager) {
    io.withPager = async (_env, fn) => {
      let buf = '';
      const pagerOut: Output = { write: (s: string) => (buf += s) };
      fn(pagerOut);
      paged = (paged ?? '') + buf;
    };
  }
  return { io, stdout: () => out, stderr: () => err, paged: () => paged };
}

export interface Sandbox {
  dir: string;
  home: string;
  configPath: string;
  cleanup(): Promise<void>;
}

export async function sandbox(): Promise<Sandbox> {
  const dir = realpathSync(mkdtempSync(path.join(os.tmpdir(), 'svc-cli-test-')));
  const home = path.join(dir, 'home');
  await mkdir(home, { recursive: true });
  return { dir, home, configPath: path.join(home, '.config', 'svc', 'config.json'), cleanup: () => rm(dir, { recursive: true, force: true }) };
}

export interface Scripted {
  prompter: Prompter;
  asked: string[];
}

/** A prompter that answers from a script and records the questions. */
export function scriptedPrompter(answers: Array<number | boolean>): Scripted {
  const asked: string[] = [];
  const next = () => {
    if (answers.length === 0) throw new Error('unexpected prompt');
    return answers.shift()!;
  };
  return {
    asked,
    prompter: {
      async select(message) {
        asked.push(message);
        return next() as number;
      },
      async confirm(message) {
        asked.push(message);
        return next() as boolean;
      },
    },
  };
}

export interface FactoryOptions {
  tty?: boolean;
  stdin?: string;
  env?: Env;
  cwd?: string;
  configPath: string;
  prompter?: Prompter;
  pager?: boolean;
  now?: Date;
}

export function makeFactory(opts: FactoryOptions): { f: Factory; t: TestIO; opened: string[] } {
  const t = testIO({ ...(opts.tty !== undefined ? { tty: opts.tty } : {}), ...(opts.stdin !== undefined ? { stdin: opts.stdin } : {}), ...(opts.pager ? { pager: true } : {}) });
  const opened: string[] = [];
  const f: Factory = {
    io: t.io,
    env: opts.env ?? {},
    cwd: opts.cwd ?? os.tmpdir(),
    fetch: nodeFetch,
    configPath: opts.configPath,
    version: '9.9.9-test',
    openBrowser: async (url) => {
      opened.push(url);
    },
    prompter: opts.prompter ?? scriptedPrompter([]).prompter,
    now: () => opts.now ?? new Date('2026-01-01T12:00:00Z'),
  };
  return { f, t, opened };
}

export interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
  paged?: string;
  opened: string[];
}

/** `svc <args>` in this process, with injected IO. */
export async function runSvc(args: string[], opts: FactoryOptions): Promise<RunResult> {
  const { f, t, opened } = makeFactory(opts);
  const code = await main(args, f);
  const paged = t.paged();
  return { code, stdout: t.stdout(), stderr: t.stderr(), opened, ...(paged !== undefined ? { paged } : {}) };
}

/** `node dist/cli/main.js <args>` as a real process. */
export function spawnSvc(args: string[], opts: { env?: Env; cwd?: string; input?: string } = {}): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve, reject) => {
    const env: Record<string, string> = {};
    // A clean environment: nothing from the developer's shell leaks in.
    for (const k of ['PATH', 'SYSTEMROOT', 'TMPDIR']) if (process.env[k]) env[k] = process.env[k]!;
    for (const [k, v] of Object.entries(opts.env ?? {})) if (v !== undefined) env[k] = v;
    const child = spawn(process.execPath, [binPath, ...args], { cwd: opts.cwd ?? os.tmpdir(), env, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('error', reject);
    child.on('close', (code) => resolve({ code: code ?? -1, stdout, stderr }));
    child.stdin.end(opts.input ?? '');
  });
}

export const PROJECT = {
  project_id: '0b9a6c52-8a53-4a4e-9f6b-1a4f1f6f0a01',
  account_id: '5d3a1f9e-1c1b-4f0e-8f7e-2b2c3d4e5f60',
  name: 'Demo',
  slug: 'demo',
  repo_url: null,
  default_branch: 'main',
  created_at: '2026-01-01T10:00:00.000Z',
};

export function makeCR(over: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    cr_id: '7c0e1f2a-3b4c-4d5e-8f60-718293a4b5c6',
    account_id: PROJECT.account_id,
    project_id: PROJECT.project_id,
    number: 3,
    title: 'Add greeting',
    description: 'Says hello.',
    base_ref: 'main',
    head_ref: 'session-abc',
    status: 'open',
    head_commit_sha: 'a'.repeat(40),
    base_commit_sha: 'b'.repeat(40),
    origin_session_id: null,
    created_by: '9e8d7c6b-5a49-4382-a1b0-c9d8e7f6a5b4',
    merged_at: null,
    merged_by: null,
    merge_commit_sha: null,
    closed_at: null,
    closed_by: null,
    metadata: {},
    created_at: '2026-01-01T11:57:00.000Z',
    updated_at: '2026-01-01T11:57:00.000Z',
    ...over,
  };
}

export const ME = {
  user: { user_id: '9e8d7c6b-5a49-4382-a1b0-c9d8e7f6a5b4', email: 'ada@example.com', name: 'Ada' },
  account: { account_id: PROJECT.account_id, name: 'Acme', role: 'owner' },
  accounts: [{ account_id: PROJECT.account_id, name: 'Acme', role: 'owner' }],
  token_id: '00000000-0000-4000-8000-0000000000aa',
};
