import type { Db } from '../../infra/db/db.js';
import type { SandboxProvider } from '../../infra/sandbox/port.js';
import { appQueries, type AppRow } from '../../sql/queries/apps.js';
import type { AppJob } from './sync.js';

/**
 * At worker start: an app that should run (not removed, deployed before) whose sandbox is
 * gone (the worker that ran it stopped) is deployed again from its recorded commit.
 */
export async function resumeApps(db: Db, provider: SandboxProvider | undefined, enqueue: (job: AppJob) => Promise<void>): Promise<number> {
  const rows = await db.rows<AppRow>(appQueries.resumable());
  let n = 0;
  for (const a of rows) {
    // An app live before apps were served by the API has no target: deployed again.
    if (a.target && a.sandbox && provider && a.sandbox.provider === provider.name && (await provider.inspect(a.sandbox).catch(() => 'unknown')) === 'running') continue;
    await enqueue({ action: 'deploy', project_id: a.project_id, name: a.name, manifest_hash: a.manifest_hash, commit_sha: a.commit_sha! });
    n++;
  }
  return n;
}
