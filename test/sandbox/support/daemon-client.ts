/**
 * Talking to a sandbox's daemon from a provider test: its health, and commands run by
 * the exec runtime (exec-runtime.ts) inside the sandbox, through the daemon's proxy.
 */
import { readdirSync, readlinkSync } from 'node:fs';
import path from 'node:path';
import { signUserContext } from '../../../agentd/auth.js';
import { distRoot } from '../../agentd/support/harness.js';
import { sandboxFetch } from '../../../lib/sandbox-dial.js';
import { eventually } from '../../support/wait.js';

export const execRuntimeBin = path.join(distRoot, 'test', 'sandbox', 'support', 'exec-runtime.js');

export interface Health {
  daemon: string;
  agent: 'starting' | 'running' | 'exited';
  repo: string | null;
  branch: string | null;
  commit: string | null;
}

/** Polls `<url>/svc/health` (each probe bounded) until the agent runtime is `running`. */
export async function waitForRunning(url: string, timeoutMs = 30_000, describeFailure: () => string = () => ''): Promise<Health> {
  let last: unknown;
  return eventually(
    async () => {
      try {
        const res = await sandboxFetch(url, '/svc/health', { signal: AbortSignal.timeout(2_000) });
        last = await res.json();
        return (last as Health).agent === 'running' ? (last as Health) : undefined;
      } catch (err) {
        last = String(err);
        return undefined;
      }
    },
    'a running agent',
    { timeoutMs, maxIntervalMs: 100 },
  ).catch(() => {
    throw new Error(`daemon at ${url} never reported a running agent (last: ${JSON.stringify(last)}) ${describeFailure()}`);
  });
}

/** Runs `argv` inside the sandbox (as the agent runtime would) and answers its result. */
export async function execIn(url: string, token: string, argv: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  const ctx = signUserContext(token, { sub: 'user-1', exp: Math.floor(Date.now() / 1000) + 300 });
  const res = await sandboxFetch(url, '/exec', {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-svc-user-context': ctx },
    body: JSON.stringify({ argv }),
    signal: AbortSignal.timeout(20_000),
  });
  if (res.status !== 200) throw new Error(`exec through the daemon answered ${res.status}: ${await res.text()}`);
  return (await res.json()) as { code: number | null; stdout: string; stderr: string };
}

export async function envIn(url: string, token: string): Promise<{ env: Record<string, string>; uid: number }> {
  const ctx = signUserContext(token, { sub: 'user-1', exp: Math.floor(Date.now() / 1000) + 300 });
  const res = await sandboxFetch(url, '/env', { headers: { 'x-svc-user-context': ctx }, signal: AbortSignal.timeout(10_000) });
  return (await res.json()) as { env: Record<string, string>; uid: number };
}

/** Host pids living in the pid namespace `pid:[inode]`. */
export function pidsInNamespace(inode: number): number[] {
  const out: number[] = [];
  for (const e of readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    try {
      if (readlinkSync(`/proc/${e}/ns/pid`) === `pid:[${inode}]`) out.push(Number(e));
    } catch {
      /* gone or not ours */
    }
  }
  return out;
}
