import { DomainError, domainErrorFrom } from '../../domain/errors.js';
import { assertCanMerge, type ChangeRequest } from '../../domain/change-request/index.js';
import type { ProjectRecord } from '../../domain/project.js';
import type { Queue } from '../../infra/queue.js';
import { step } from '../../lib/step-trace.js';
import { CR_MERGE, type MergeContext, type MergeJobData } from './merge.js';
import { findCr, type CrDeps } from './service.js';
import { checksInForce } from '../checks/config.js';

/** With the merge queue on, the queue is the way in: a direct merge would land something no queue run checked. */
export const mergeQueueEnabled = (baseRef: string): DomainError =>
  new DomainError(
    'merge_queue_enabled',
    'Merge queue enabled',
    `svc.toml on the default branch turns the merge queue on: merges into '${baseRef}' go through it. Ask to merge when green ({"when":"checks_pass"}, svc cr merge --when-green) to queue it.`,
  );

/**
 * A merge asked for by a person (`POST .../merge` and the dashboard's Merge button): the
 * CR is read, refused at once with the decider's 409 when it is not open, then merged as
 * a durable `cr.merge` job (run here when this process works the queue, else by a worker).
 */
const MERGE_WAIT_MS = 120_000;

export interface MergeRequest {
  expected_head_sha?: string | undefined;
  message?: string | undefined;
}

export async function requestMerge(
  deps: CrDeps & { queue: Queue; onConflict?: () => void },
  project: ProjectRecord,
  ref: string,
  actor: string,
  body: MergeRequest,
): Promise<ChangeRequest> {
  const cr = await findCr(deps.db, project.project_id, ref);
  assertCanMerge(cr); // 409 at once for a CR that is not open (the decider's rule)
  step('load CR');
  if ((await checksInForce(deps.db, project.project_id)).merge_queue.enabled) throw mergeQueueEnabled(cr.base_ref);
  const job: MergeJobData = {
    project_id: project.project_id,
    cr_id: cr.cr_id,
    actor,
    ...(body.expected_head_sha !== undefined ? { expected_head_sha: body.expected_head_sha } : {}),
    ...(body.message !== undefined ? { message: body.message } : {}),
  };
  return viaQueue(deps.queue, job, { project, cr }, deps.onConflict);
}

/** Runs `cr.merge` as a durable job and waits for its outcome. */
async function viaQueue(queue: Queue, job: MergeJobData, local: MergeContext, onConflict?: () => void): Promise<ChangeRequest> {
  const out = await queue.run(CR_MERGE, job, MERGE_WAIT_MS, { local });
  if (!out) throw new DomainError('unavailable', 'Merge pending', 'The merge is queued but no worker finished it in time; check the CR again shortly.');
  if (out.ok) return out.value as ChangeRequest;
  if (out.error.code === 'merge_failed') onConflict?.();
  throw domainErrorFrom(out.error);
}
