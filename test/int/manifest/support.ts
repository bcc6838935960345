import type { TestProject } from '../../support/server.js';
import { eventually as poll } from '../../support/wait.js';

/** test/support/wait.ts's `eventually`, bounded at 20 s by default (these wait on a worker's job). */
export const eventually = <T>(fn: () => Promise<T | undefined | null | false>, what: string, timeoutMs = 20_000, state?: () => Promise<unknown>): Promise<T> =>
  poll(fn, what, { timeoutMs, maxIntervalMs: 50, state });

/** A project's apps and their deploys' log, for a wait on an app that gives up. */
export const appsState = (p: TestProject) => async () => ({
  apps: (await p.api.get(`${projectPath(p)}/apps`)).body.apps,
  log: await p.srv.db.db.rows({ text: "SELECT type, data FROM events WHERE type LIKE 'App%' ORDER BY global_position DESC LIMIT 6", values: [] }).catch((e: unknown) => String(e)),
});

/** Commits `files` on a new branch, opens a CR and merges it; returns the merge commit. */
export async function mergeChange(p: TestProject, branch: string, files: Record<string, string | null>): Promise<string> {
  await p.repo.commit(branch, files);
  const cr = await p.api.post(p.base, { title: `change ${branch}`, head_ref: branch });
  if (cr.status !== 201) throw new Error(`open failed: ${JSON.stringify(cr.body)}`);
  const m = await p.api.post(`${p.base}/${cr.body.change_request.number}/merge`, {});
  if (m.status !== 200) throw new Error(`merge failed: ${JSON.stringify(m.body)}`);
  return m.body.change_request.merge_commit_sha as string;
}

export const projectPath = (p: TestProject) => p.base.replace(/\/change-requests$/, '');
