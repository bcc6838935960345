import { DomainError } from '../../domain/errors.js';
import { findCr } from '../change-requests/service.js';
import { TERMINAL, type AutoMerge, type QueueEntry } from '../../domain/change-request/index.js';
import type { ProjectRecord } from '../../domain/project.js';
import { readyWhenGreen, requestAutoMerge } from '../checks/auto-merge.js';
import { checksInForce } from '../checks/config.js';
import { appendCheckEvents, readCrChecks } from '../checks/stream.js';
import type { QueueDeps } from './deps.js';
import { nowOf } from '../../lib/clock.js';

export interface MergeWhenGreen {
  auto_merge: AutoMerge;
  merge_queue?: QueueEntry;
}

/**
 * `POST .../merge {"when":"checks_pass"}`, the dashboard's button and `svc cr merge
 * --when-green`: with the merge queue on (the manifest in force), the CR enters its base
 * branch's queue bound to the head the person saw; else merge-when-green on its own pair.
 * The answer's `auto_merge` reads the same either way (pending on that head), so every
 * client keeps working; `merge_queue` says where it went.
 */
export async function mergeWhenGreen(deps: QueueDeps, project: ProjectRecord, ref: string, actor: string, body: { expected_head_sha?: string | undefined }): Promise<MergeWhenGreen> {
  const config = await checksInForce(deps.db, project.project_id);
  if (!config.merge_queue.enabled) return { auto_merge: await requestAutoMerge(deps, project, ref, actor, body) };
  const entry = await enqueue(deps, project, ref, actor, body);
  return {
    auto_merge: { status: 'pending', head_sha: entry.head_sha, requested_by: entry.queued_by, requested_at: entry.queued_at, finished_at: null, reason: null },
    merge_queue: entry,
  };
}

/**
 * Enters the queue: refused at once (as merge-when-green is) when the CR is not open (409),
 * its head moved from `expected_head_sha` (409), it conflicts with the base now (409), or
 * nothing is required (422). Asked again on the same head: the same entry.
 */
async function enqueue(deps: QueueDeps, project: ProjectRecord, ref: string, actor: string, body: { expected_head_sha?: string | undefined }): Promise<QueueEntry> {
  const { cr, head, base } = await readyWhenGreen(deps, project, ref, actor, body);
  const at = nowOf(deps).toISOString();
  await appendCheckEvents(deps, project.project_id, cr.cr_id, actor, (s) => [
    { type: 'ChangeRequestQueued', data: { head_sha: head, base_sha: base, queued_by: actor, queued_at: at, base_ref: cr.base_ref } },
    // Its own pair runs pause (they hold check slots the queue's runs need; a running one stops); they come back when it leaves.
    ...s.checks.runs.filter((r) => r.via === null && !TERMINAL.has(r.status)).map((r) => ({ type: 'CheckCancelled' as const, data: { run_id: r.run_id, cancelled_at: at, reason: 'superseded' as const } })),
  ]);
  await deps.enqueueStep({ project_id: project.project_id, base_ref: cr.base_ref }).catch((err: Error) => deps.logger.warn({ cr_id: cr.cr_id, err: err.message }, 'queue step not asked; the sweeper takes it'));
  return (await readCrChecks(deps, cr.cr_id)).checks.queue!;
}

/**
 * `svc queue rm` / `DELETE .../merge-queue/:crId`: a person takes the CR out of the queue
 * (`by_person`). A CR not queued: 409. What the queue built on it is rebuilt without it
 * on the queue's next step.
 */
export async function dequeueByPerson(deps: QueueDeps, project: ProjectRecord, ref: string, actor: string): Promise<QueueEntry> {
  const cr = await findCr(deps.db, project.project_id, ref);
  const at = nowOf(deps).toISOString();
  const { appended } = await appendCheckEvents(deps, project.project_id, cr.cr_id, actor, (s) => {
    const q = s.checks.queue;
    if (q?.status !== 'queued') throw new DomainError('conflict', 'Conflict', `Change request #${cr.number} is not in the merge queue.`);
    return [{ type: 'ChangeRequestDequeued', data: { head_sha: q.head_sha, reason: 'by_person', dequeued_at: at } }];
  });
  if (appended.length) await deps.enqueueStep({ project_id: project.project_id, base_ref: cr.base_ref }).catch(() => undefined);
  return (await readCrChecks(deps, cr.cr_id)).checks.queue!;
}
