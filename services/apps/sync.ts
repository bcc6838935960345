import type { Executor } from '../../infra/db/db.js';
import { appHash } from '../../domain/manifest/parse.js';
import type { AppSpec } from '../../domain/manifest/schema.js';
import { appQueries } from '../../sql/queries/apps.js';
import { appendLog, SYSTEM_ACTOR } from '../manifest/audit-log.js';

/** The queue that runs `AppJob`s (`workers/manifest.ts`). */
export const APP_DEPLOY = 'app.deploy';

export type AppJob =
  | { action: 'deploy'; project_id: string; name: string; manifest_hash: string; commit_sha: string }
  | { action: 'stop'; project_id: string; name: string };

/**
 * App rows follow `[[apps]]`: an entry whose hash is new or changed becomes a deploy of
 * the commit the manifest came from; an entry that disappeared becomes a stop. An
 * unchanged entry does nothing, whatever else the merge changed.
 */
export async function syncApps(tx: Executor, projectId: string, specs: AppSpec[], commitSha: string): Promise<AppJob[]> {
  const jobs: AppJob[] = [];
  const events: Array<{ type: string; data: Record<string, unknown> }> = [];
  for (const spec of specs) {
    const hash = appHash(spec);
    const changed = await tx.rows(appQueries.upsertChanged(projectId, spec.name, spec, hash));
    if (changed.length) {
      jobs.push({ action: 'deploy', project_id: projectId, name: spec.name, manifest_hash: hash, commit_sha: commitSha });
      events.push({ type: 'AppChanged', data: { name: spec.name, manifest_hash: hash, commit_sha: commitSha } });
    }
  }
  for (const r of await tx.rows<{ name: string }>(appQueries.markRemoved(projectId, specs.map((s) => s.name)))) {
    jobs.push({ action: 'stop', project_id: projectId, name: r.name });
    events.push({ type: 'AppRemoved', data: { name: r.name } });
  }
  await appendLog(tx, 'apps', projectId, events, SYSTEM_ACTOR);
  return jobs;
}
