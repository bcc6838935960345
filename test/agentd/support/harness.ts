/**
 * Test harness for the daemon: free ports, temp dirs, file:// remotes, and the daemon as
 * a real child process (`node dist/agentd/svc-agent.js`). Every process started here is
 * tracked and killed on `stop()` and, as a last resort, when the test process exits.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync, writeFileSync, mkdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { signUserContext, type UserContext } from '../../../agentd/auth.js';
import { eventually as poll, until } from '../../support/wait.js';
import { freePort } from '../../support/server.js';

export const distRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..');
export const daemonBin = path.join(distRoot, 'agentd', 'svc-agent.js');
export const entrypointBin = path.join(distRoot, 'agentd', 'svc-entrypoint.js');
export const fakeRuntimeBin = path.join(distRoot, 'test', 'agentd', 'support', 'fake-runtime.js');

const live = new Set<ChildProcess>();
process.on('exit', () => {
  for (const c of live) {
    try {
      c.kill('SIGKILL');
    } catch {
      /* gone */
    }
  }
});

export { freePort };

export function tempDir(prefix = 'svc-agentd-'): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(path.join(os.tmpdir(), prefix));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

export function gitSync(args: string[], cwd?: string): string {
  const r = spawnSync('git', args, {
    cwd,
    encoding: 'utf8',
    env: { ...process.env, GIT_AUTHOR_NAME: 't', GIT_AUTHOR_EMAIL: 't@example.com', GIT_COMMITTER_NAME: 't', GIT_COMMITTER_EMAIL: 't@example.com' },
  });
  if (r.status !== 0) throw new Error(`git ${args.join(' ')} failed: ${r.stderr}`);
  return r.stdout.trim();
}

/**
 * A bare repo with `main` holding `svc.toml` (and `extra` files), plus a session branch
 * cut from it. `push()` commits a file on a branch from a scratch clone.
 */
export function makeRemote(root: string, opts: { branch?: string; files?: Record<string, string> } = {}) {
  const bare = path.join(root, 'remote.git');
  const work = path.join(root, 'seed');
  gitSync(['init', '--bare', '--initial-branch=main', bare]);
  gitSync(['init', '--initial-branch=main', work]);
  const files = opts.files ?? { 'svc.toml': '[agent]\nconfig_dir = ".svc/agent"\n', 'README.md': 'hello\n' };
  for (const [name, content] of Object.entries(files)) {
    mkdirSync(path.dirname(path.join(work, name)), { recursive: true });
    writeFileSync(path.join(work, name), content);
  }
  gitSync(['add', '-A'], work);
  gitSync(['commit', '-m', 'seed'], work);
  gitSync(['remote', 'add', 'origin', bare], work);
  gitSync(['push', 'origin', 'main'], work);
  const branch = opts.branch ?? 'session-1234';
  gitSync(['push', 'origin', `main:refs/heads/${branch}`], work);
  return {
    bare,
    url: `file://${bare}`,
    branch,
    push(onBranch: string, file: string, content: string): string {
      gitSync(['fetch', 'origin'], work);
      gitSync(['checkout', '-B', onBranch, `origin/${onBranch}`], work);
      writeFileSync(path.join(work, file), content);
      gitSync(['add', '-A'], work);
      gitSync(['commit', '-m', `change ${file}`], work);
      gitSync(['push', 'origin', `${onBranch}:${onBranch}`], work);
      return gitSync(['rev-parse', 'HEAD'], work);
    },
    tip(ref: string): string {
      return gitSync(['rev-parse', ref], bare);
    },
  };
}

export interface DaemonHandle {
  url: string;
  port: number;
  agentPort: number;
  token: string;
  workspace: string;
  home: string;
  child: ChildProcess;
  /** Everything the daemon printed so far. */
  output(): string;
  /** A signed X-Svc-User-Context value. */
  sign(ctx?: Partial<UserContext>): string;
  waitForAgent(state: 'starting' | 'running' | 'exited', timeoutMs?: number): Promise<HealthBody>;
  health(): Promise<HealthBody>;
  control(path: string, body?: unknown, token?: string): Promise<{ status: number; body: any }>;
  stop(): Promise<number | null>;
}

export interface HealthBody {
  daemon: string;
  agent: 'starting' | 'running' | 'exited';
  repo: string | null;
  branch: string | null;
  commit: string | null;
}

export interface DaemonOptions {
  env?: Record<string, string>;
  /** Use this dir (created by the caller) instead of a fresh one. */
  root?: string;
  bin?: string;
  args?: string[];
}

export async function startDaemon(opts: DaemonOptions = {}): Promise<DaemonHandle> {
  const root = opts.root ?? tempDir().dir;
  const port = await freePort();
  const agentPort = await freePort();
  const token = opts.env?.SVC_TOKEN ?? randomBytes(24).toString('hex');
  const workspace = path.join(root, 'workspace');
  const home = path.join(root, 'home');
  const env: Record<string, string> = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    LOG_LEVEL: 'debug',
    SVC_TOKEN: token,
    SVC_SERVICE_PORT: String(port),
    SVC_BIND_HOST: '127.0.0.1',
    SVC_AGENT_PORT: String(agentPort),
    SVC_AGENT_RUNTIME: fakeRuntimeBin,
    SVC_AGENT_HOME: home,
    SVC_WORKSPACE: workspace,
    SVC_AGENT_RESTART_BACKOFF_MS: '100',
    SVC_AGENT_STOP_GRACE_MS: '2000',
    ...opts.env,
  };
  const bin = opts.bin ?? daemonBin;
  const child = spawn(process.execPath, [bin, ...(opts.args ?? [])], { env, stdio: ['ignore', 'pipe', 'pipe'] });
  live.add(child);
  let out = '';
  child.stdout!.setEncoding('utf8').on('data', (d: string) => (out += d));
  child.stderr!.setEncoding('utf8').on('data', (d: string) => (out += d));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  exited.then(() => live.delete(child));
  const url = `http://127.0.0.1:${port}`;

  const health = async (): Promise<HealthBody> => (await (await fetch(`${url}/svc/health`)).json()) as HealthBody;
  const handle: DaemonHandle = {
    url,
    port,
    agentPort,
    token,
    workspace,
    home,
    child,
    output: () => out,
    sign: (ctx = {}) => signUserContext(token, { sub: 'user-1', exp: Math.floor(Date.now() / 1000) + 300, ...ctx }),
    health,
    async waitForAgent(state, timeoutMs = 20_000) {
      let last: HealthBody | undefined;
      const daemonGone = new Error('daemon exited');
      return poll(
        async () => {
          if (child.exitCode !== null) throw daemonGone;
          last = await health().catch(() => undefined);
          return last?.agent === state ? last : undefined;
        },
        `agent ${state}`,
        { timeoutMs, maxIntervalMs: 50 },
      ).catch((err) => {
        if (err === daemonGone) throw new Error(`daemon exited (${child.exitCode}):\n${out}`);
        throw new Error(`agent never reached ${state} (last ${JSON.stringify(last)}):\n${out.slice(-4000)}`);
      });
    },
    async control(p, body, tok = token) {
      const res = await fetch(`${url}${p}`, {
        method: 'POST',
        headers: { authorization: `Bearer ${tok}`, 'content-type': 'application/json' },
        body: body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body),
      });
      const text = await res.text();
      let parsed: unknown = text;
      try {
        parsed = JSON.parse(text);
      } catch {
        /* not JSON */
      }
      return { status: res.status, body: parsed };
    },
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        const t = setTimeout(() => child.kill('SIGKILL'), 8_000);
        const code = await exited;
        clearTimeout(t);
        if (!opts.root) rmSync(root, { recursive: true, force: true });
        return code;
      }
      if (!opts.root) rmSync(root, { recursive: true, force: true });
      return child.exitCode;
    },
  };
  // Wait until the listener answers (it comes up before clone and runtime).
  const listening = await until(
    async () => {
      if (child.exitCode !== null) return true;
      return health().then(
        () => true,
        () => false,
      );
    },
    'the daemon to listen',
    { timeoutMs: 15_000, maxIntervalMs: 50 },
  ).then(
    () => true,
    () => false,
  );
  if (child.exitCode !== null) {
    if (!opts.root) rmSync(root, { recursive: true, force: true });
    throw new Error(`daemon exited early (${child.exitCode}):\n${out}`);
  }
  if (!listening) {
    await handle.stop();
    throw new Error(`daemon never listened:\n${out}`);
  }
  return handle;
}

/** Starts the fake runtime directly (a "preview app" on a sandbox port, or the bench floor). */
export async function startFakeRuntime(env: Record<string, string> = {}): Promise<{ port: number; stop: () => Promise<void> }> {
  const port = await freePort();
  const child = spawn(process.execPath, [fakeRuntimeBin, 'serve', '--port', String(port), '--hostname', '127.0.0.1'], {
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  live.add(child);
  const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
  exited.then(() => live.delete(child));
  await new Promise<void>((resolve, reject) => {
    child.stdout!.setEncoding('utf8').on('data', (d: string) => {
      if (d.includes('listening')) resolve();
    });
    child.on('exit', (code) => reject(new Error(`fake runtime exited ${code}`)));
  });
  return {
    port,
    stop: async () => {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGKILL');
        await exited;
      }
    },
  };
}

/** test/support/wait.ts's `eventually` (a probe that throws is "not yet"), bounded at 15 s by default. */
export const eventually = <T>(fn: () => Promise<T | undefined | false>, timeoutMs = 15_000, what = 'condition'): Promise<T> =>
  poll(fn, what, { timeoutMs, ignoreErrors: true, maxIntervalMs: 50 });
