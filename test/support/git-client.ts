/**
 * Real `git` as a user runs it, asynchronously (the server under test may share this
 * process: a synchronous child would freeze it). No global config, no prompts.
 */
import { spawn } from 'node:child_process';
import { mkdtemp, rm, writeFile, mkdir } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

export interface GitRun {
  code: number;
  stdout: string;
  stderr: string;
}

export const gitEnv = (extra: Record<string, string> = {}): Record<string, string> => ({
  PATH: process.env.PATH ?? '/usr/bin:/bin',
  HOME: os.tmpdir(),
  GIT_CONFIG_GLOBAL: '/dev/null',
  GIT_CONFIG_NOSYSTEM: '1',
  GIT_TERMINAL_PROMPT: '0',
  GIT_AUTHOR_NAME: 'Test',
  GIT_AUTHOR_EMAIL: 'test@example.test',
  GIT_COMMITTER_NAME: 'Test',
  GIT_COMMITTER_EMAIL: 'test@example.test',
  LC_ALL: 'C',
  ...extra,
});

export function git(cwd: string, args: string[], opts: { env?: Record<string, string>; input?: string; timeoutMs?: number } = {}): Promise<GitRun> {
  return new Promise((resolve, reject) => {
    const child = spawn('git', args, { cwd, env: gitEnv(opts.env), stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 60_000);
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    child.on('error', reject);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code: code ?? -1, stdout, stderr });
    });
    child.stdin.on('error', () => {});
    child.stdin.end(opts.input ?? '');
  });
}

export async function gitOk(cwd: string, args: string[], opts: { env?: Record<string, string> } = {}): Promise<string> {
  const r = await git(cwd, args, opts);
  if (r.code !== 0) throw new Error(`git ${args.join(' ')} failed (${r.code}): ${r.stderr}`);
  return r.stdout.trim();
}

/** `http://x-access-token:<token>@host/git/<slug>.git` (tests only: a token in a URL). */
export function authedUrl(repoUrl: string, token: string | null, user = 'x-access-token'): string {
  if (!token) return repoUrl;
  const u = new URL(repoUrl);
  u.username = user;
  u.password = token;
  return u.toString();
}

export interface WorkDir {
  dir: string;
  run(args: string[], env?: Record<string, string>): Promise<GitRun>;
  ok(args: string[], env?: Record<string, string>): Promise<string>;
  commit(files: Record<string, string>, message?: string): Promise<string>;
  cleanup(): Promise<void>;
}

export async function workDir(prefix = 'svc-git-'): Promise<WorkDir> {
  const dir = await mkdtemp(path.join(os.tmpdir(), prefix));
  const w: WorkDir = {
    dir,
    run: (args, env) => git(dir, args, env ? { env } : {}),
    ok: (args, env) => gitOk(dir, args, env ? { env } : {}),
    async commit(files, message = 'change') {
      for (const [f, content] of Object.entries(files)) {
        await mkdir(path.dirname(path.join(dir, f)), { recursive: true });
        await writeFile(path.join(dir, f), content);
      }
      await w.ok(['add', '-A']);
      await w.ok(['commit', '-q', '-m', message]);
      return w.ok(['rev-parse', 'HEAD']);
    },
    cleanup: () => rm(dir, { recursive: true, force: true }),
  };
  return w;
}
