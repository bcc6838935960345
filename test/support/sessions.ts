/**
 * Session tests: a server whose sandboxes run the scripted runtime (or the real
 * opencode), helpers to wait for a status, and a last-resort cleanup that kills every
 * sandbox process the server started (they run detached, to survive a server crash).
 */
import path from 'node:path';
import { distRoot } from '../agentd/support/harness.js';
import type { TestDb } from './db.js';
import type { Res } from './http.js';
import { withProject, type TestProject } from './server.js';

export const fakeRuntime = path.join(distRoot, 'test', 'agentd', 'support', 'fake-runtime.js');

export interface SessionProject extends TestProject {
  /** `/v1/projects/<slug>/sessions` */
  sessions: string;
}

export async function withSessionProject<T>(
  opts: { slug: string; env?: Record<string, string>; poolSize?: number },
  fn: (p: SessionProject) => Promise<T>,
): Promise<T> {
  return withProject({ ...opts, env: { SVC_AGENT_RUNTIME: fakeRuntime, ...opts.env } }, async (p) => {
    try {
      return await fn({ ...p, sessions: `/v1/projects/${opts.slug}/sessions` });
    } finally {
      await killSandboxes(p.srv.db);
    }
  });
}

/** Kills every process-provider sandbox recorded in the database (their process groups). */
export async function killSandboxes(db: TestDb): Promise<void> {
  const rows = await db.db.rows<{ ref: string | null }>({
    text: "SELECT ref FROM session_sandboxes WHERE provider = 'process' AND ref IS NOT NULL",
    values: [],
  });
  for (const r of rows) {
    const pid = Number(r.ref);
    if (!Number.isInteger(pid) || pid <= 1) continue;
    try {
      process.kill(-pid, 'SIGKILL');
    } catch {
      /* gone */
    }
  }
}

export async function waitForStatus(
  api: { get: (p: string) => Promise<Res> },
  url: string,
  statuses: string[],
  timeoutMs = 30_000,
): Promise<any> {
  const deadline = Date.now() + timeoutMs;
  let last: Res | undefined;
  for (;;) {
    last = await api.get(url);
    if (last.status === 200 && statuses.includes(last.body.session.status)) return last.body.session;
    if (Date.now() > deadline) throw new Error(`session never reached ${statuses.join('|')}: ${JSON.stringify(last.body)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

export const pidAlive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};
