/**
 * Session tests: a server whose sandboxes run the scripted runtime (or the real
 * opencode), helpers to wait for a status, and a last-resort cleanup that kills every
 * sandbox process the server started (they run detached, to survive a server crash).
 */
import path from 'node:path';
import { distRoot } from '../agentd/support/harness.js';
import type { TestDb } from './db.js';
import { client, type Res } from './http.js';
import { fixtureRepo } from './repo.js';
import { startTestServer, type TestProject } from './server.js';
import { eventually } from './wait.js';
import { killSandboxesUnder } from './leftovers.js';

export const fakeRuntime = path.join(distRoot, 'test', 'agentd', 'support', 'fake-runtime.js');

export interface SessionProject extends TestProject {
  /** `/v1/projects/<slug>/sessions` */
  sessions: string;
}

export async function withSessionProject<T>(
  opts: { slug: string; env?: Record<string, string>; poolSize?: number },
  fn: (p: SessionProject) => Promise<T>,
): Promise<T> {
  const { slug, ...serverOpts } = opts;
  const srv = await startTestServer({ ...serverOpts, env: { SVC_AGENT_RUNTIME: fakeRuntime, ...opts.env } });
  const repo = await fixtureRepo();
  try {
    const api = client(srv.url, srv.token);
    const created = await api.post('/v1/projects', { name: slug, slug, repo_url: repo.url });
    if (created.status !== 201) throw new Error(`could not create project ${slug}: ${JSON.stringify(created.body)}`);
    return await fn({ srv, repo, api, base: `/v1/projects/${slug}/change-requests`, sessions: `/v1/projects/${slug}/sessions` });
  } finally {
    await killSandboxes(srv.db);
    await srv.stop();
    // A provisioning job that finished while the server stopped may have started one more.
    await killSandboxesUnder(srv.dataDir);
    await repo.cleanup();
  }
}

/** Kills every sandbox of `dataDir` (test/support/leftovers.ts), after its server is gone. */
export { killSandboxesUnder } from './leftovers.js';

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
  let last: Res | undefined;
  return eventually(
    async () => {
      last = await api.get(url);
      return last.status === 200 && statuses.includes(last.body.session.status) ? last.body.session : undefined;
    },
    'the session status',
    { timeoutMs, maxIntervalMs: 50 },
  ).catch(() => {
    throw new Error(`session never reached ${statuses.join('|')}: ${JSON.stringify(last?.body)}`);
  });
}

export const pidAlive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** The runtime answers through the server's proxy (the daemon says 503 while it boots): the first non-503 answer, which must be 200. */
export async function agentReady(api: { get: (p: string) => Promise<Res> }, url: string): Promise<Res> {
  const r = await eventually(
    async () => {
      const res = await api.get(url);
      return res.status === 503 ? undefined : res;
    },
    'the agent to answer (not 503)',
    { timeoutMs: 20_000, maxIntervalMs: 50 },
  );
  if (r.status !== 200) throw new Error(`agent answered ${r.status}: ${JSON.stringify(r.body)}`);
  return r;
}
