import { z } from 'zod';

/**
 * A CR's place in the merge queue of its base branch (docs/merge-queue.md), on the CR's own
 * stream so its history and `?as_of=` show it like every CR event. Queued carries the head
 * the person saw (what may land) and the base then; no position: it goes stale at once.
 */
const sha = z.string().regex(/^[0-9a-f]{40}([0-9a-f]{24})?$/);
const uuid = z.uuid();
const time = z.iso.datetime({ offset: true });

export const DEQUEUE_REASONS = ['check_failed', 'conflict', 'head_moved', 'base_changed', 'closed', 'by_person'] as const;
export type DequeueReason = (typeof DEQUEUE_REASONS)[number];

export const ChangeRequestQueued = z.object({
  head_sha: sha,
  base_sha: sha,
  queued_by: uuid,
  queued_at: time,
  /** The queue it entered: a CR whose base_ref changes afterwards leaves it (base_changed). */
  base_ref: z.string().min(1).max(255).optional(),
});
export const ChangeRequestDequeued = z.object({
  head_sha: sha,
  reason: z.enum(DEQUEUE_REASONS),
  dequeued_at: time,
  /** The check or required status that failed, or the files in conflict: our words, never a check's output. */
  context: z.string().max(500).optional(),
  /** A conflict: the CRs ahead of it in the batch it was built on (sent to the agent once they landed). */
  ahead: z.array(uuid).max(64).optional(),
});

export const queueEventSchemas = { ChangeRequestQueued, ChangeRequestDequeued } as const;
