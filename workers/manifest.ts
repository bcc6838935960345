import { z } from 'zod';
import type { ProjectRecord } from '../domain/project.js';
import type { ChangeRequest } from '../domain/change-request/index.js';
import type { Queue, JobOutput } from '../infra/queue.js';
import { syncIfMoved, syncProjectById, type ManifestDeps } from '../services/manifest/sync.js';
import type { MoveReason } from '../services/manifest/follow.js';
import { runAppJob, type AppDeps } from '../services/apps/deploy.js';
import type { AppJob } from '../services/apps/sync.js';

export const MANIFEST_SYNC = 'manifest.sync';

const syncJob = z.object({ project_id: z.uuid(), reason: z.string().max(200), moved: z.boolean().optional() });
const appJob = z.discriminatedUnion('action', [
  z.object({ action: z.literal('deploy'), project_id: z.uuid(), name: z.string(), manifest_hash: z.string(), commit_sha: z.string().regex(/^[0-9a-f]{40,64}$/) }),
  z.object({ action: z.literal('stop'), project_id: z.uuid(), name: z.string() }),
]);

/** `manifest.sync`: re-reads svc.toml of the project's default branch (retried by pg-boss on failure). */
export function manifestSyncHandler(deps: ManifestDeps) {
  return async (data: unknown): Promise<JobOutput> => {
    const job = syncJob.parse(data);
    await (job.moved ? syncIfMoved : syncProjectById)(deps, job.project_id, job.reason);
    return { ok: true, value: null };
  };
}

export function appDeployHandler(deps: AppDeps) {
  return async (data: unknown): Promise<JobOutput> => {
    await runAppJob(deps, appJob.parse(data) as AppJob);
    return { ok: true, value: null };
  };
}

/** The CR merge hook: a merge into the default branch queues a manifest re-sync. */
export function onMergedResync(queue: Queue) {
  return async (project: ProjectRecord, cr: ChangeRequest): Promise<void> => {
    if (cr.base_ref !== project.default_branch) return;
    await queue.enqueue(MANIFEST_SYNC, { project_id: project.project_id, reason: `merge of CR #${cr.number} (${cr.merge_commit_sha ?? 'unknown'})` });
  };
}

/** Queues the sync of a default branch seen at a new tip (at most one per tip a minute). */
export function enqueueMovedSync(queue: Queue) {
  return async (projectId: string, sha: string, reason: MoveReason): Promise<void> => {
    await queue.enqueue(MANIFEST_SYNC, { project_id: projectId, reason, moved: true }, { singleton: { key: `${projectId}:${sha}`, seconds: 60 } });
  };
}
