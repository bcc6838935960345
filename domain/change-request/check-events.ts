import { z } from 'zod';
import { queueEventSchemas } from './queue-events.js';

/**
 * Checks and merge-when-green on the CR stream (docs/checks.md). A check run is
 * bound to the exact (base_sha, head_sha) pair it was queued for and runs on `merge_sha`,
 * the commit the merge engine would make (the head itself for a fast-forward). The events
 * carry status and a pointer (`run_id`, whose log lives outside the log: check_logs),
 * never a check's output: nothing a check prints reaches the event log. None of them
 * changes the CR's own JSON.
 */
const sha = z.string().regex(/^[0-9a-f]{40}([0-9a-f]{24})?$/);
const uuid = z.uuid();
const time = z.iso.datetime({ offset: true });

export const CheckQueued = z.object({
  run_id: uuid,
  name: z.string().min(1).max(100),
  base_sha: sha,
  head_sha: sha,
  /** What the check runs on; null when the pair does not merge (the run then errors at once). */
  merge_sha: sha.nullable(),
  queued_at: time,
  /**
   * A run of the merge queue on a speculative merge result (base_sha is then the result
   * before it): the refresher never supersedes it, the queue decides its fate. Absent on
   * every run queued before the queue existed, which read as the CR's own pair runs.
   */
  via: z.literal('queue').optional(),
});
export const CheckStarted = z.object({ run_id: uuid, started_at: time });
export const CheckPassed = z.object({ run_id: uuid, finished_at: time });
export const CheckFailed = z.object({
  run_id: uuid,
  finished_at: time,
  /** The command's exit status; null when it was stopped at its timeout. */
  exit_code: z.number().int().nullable(),
  reason: z.enum(['exit', 'timeout']),
});
/** The check could not run (no sandbox, a merge that conflicts): our words, never its output. */
export const CheckErrored = z.object({ run_id: uuid, finished_at: time, reason: z.string().max(500) });
export const CheckCancelled = z.object({ run_id: uuid, cancelled_at: time, reason: z.enum(['superseded', 'closed', 'merged']) });

/** Merge when green, bound to the head the person saw when asking. */
export const ChangeRequestAutoMergeRequested = z.object({ requested_by: uuid, head_sha: sha, requested_at: time });
export const ChangeRequestAutoMergeCancelled = z.object({
  head_sha: sha,
  cancelled_at: time,
  reason: z.enum(['head_moved', 'check_failed', 'status_failed', 'conflict', 'closed']),
  /** The check or status context that failed, when that is the reason. */
  context: z.string().max(255).optional(),
});

export const checkEventSchemas = {
  CheckQueued,
  CheckStarted,
  CheckPassed,
  CheckFailed,
  CheckErrored,
  CheckCancelled,
  ChangeRequestAutoMergeRequested,
  ChangeRequestAutoMergeCancelled,
  ...queueEventSchemas,
} as const;

export type CheckEventType = keyof typeof checkEventSchemas;
