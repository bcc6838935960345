import { spawn, type ChildProcess } from 'node:child_process';
import { openSync, closeSync } from 'node:fs';

/**
 * App processes started by this worker: `/bin/sh -c <command>` in the exported tree, in
 * its own process group (so a stop reaches whatever the command started), stdout and
 * stderr to a log file beside the tree (never into the server's log: apps see secrets).
 */
export interface AppProcess {
  pid: number;
  exited: Promise<number | null>;
  stop(): Promise<void>;
}

const owned = new Map<number, AppProcess>();

export function startAppProcess(opts: { command: string; cwd: string; env: Record<string, string>; logFile: string }): AppProcess {
  const fd = openSync(opts.logFile, 'a', 0o600);
  let child: ChildProcess;
  try {
    child = spawn('/bin/sh', ['-c', opts.command], { cwd: opts.cwd, env: opts.env, stdio: ['ignore', fd, fd], detached: true });
  } finally {
    closeSync(fd);
  }
  const exited = new Promise<number | null>((r) => {
    child.once('exit', (code) => r(code));
    child.once('error', () => r(null));
  });
  const pid = child.pid ?? -1;
  const proc: AppProcess = {
    pid,
    exited,
    async stop() {
      owned.delete(pid);
      if (child.exitCode !== null || child.signalCode !== null) return;
      killGroup(pid, 'SIGTERM');
      const t = setTimeout(() => killGroup(pid, 'SIGKILL'), 5000);
      await exited;
      clearTimeout(t);
    },
  };
  if (pid > 0) owned.set(pid, proc);
  return proc;
}

function killGroup(pid: number, signal: NodeJS.Signals) {
  try {
    process.kill(-pid, signal);
  } catch {
    /* already gone */
  }
}

/** Stops an app by pid: ours through its handle, otherwise its process group (same host). */
export async function stopPid(pid: number): Promise<void> {
  const mine = owned.get(pid);
  if (mine) return mine.stop();
  killGroup(pid, 'SIGTERM');
}

export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Every app process this worker started (shutdown). */
export async function stopOwnedApps(): Promise<number[]> {
  const pids = [...owned.keys()];
  await Promise.all([...owned.values()].map((p) => p.stop()));
  return pids;
}

/** Waits until `url` answers below 500, the process exits, or the time is up. */
export async function waitHealthy(url: string, proc: AppProcess, timeoutMs: number): Promise<string | null> {
  const deadline = Date.now() + timeoutMs;
  let exited = false;
  void proc.exited.then(() => (exited = true));
  let last = 'no answer';
  while (Date.now() < deadline) {
    if (exited) return 'the app exited before it became healthy';
    try {
      const res = await fetch(url, { signal: AbortSignal.timeout(2000), redirect: 'manual' });
      await res.arrayBuffer().catch(() => undefined);
      if (res.status < 500) return null;
      last = `health check answered ${res.status}`;
    } catch {
      last = 'no answer on its port';
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  return `not healthy after ${Math.round(timeoutMs / 1000)} s (${last})`;
}
