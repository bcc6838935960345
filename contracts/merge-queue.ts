import { z } from 'zod';
import { shaOut, text, time, uuid } from './common.js';

/** The merge queue of a base branch (docs/merge-queue.md). */

export const DequeueReasonSchema = z.enum(['check_failed', 'conflict', 'head_moved', 'base_changed', 'closed', 'by_person']);

/** A CR's place in its base branch's queue, as its own stream says (the latest time it entered). */
export const CrQueueSchema = z.strictObject({
  status: z.enum(['queued', 'merged', 'left']),
  head_sha: shaOut,
  base_sha: shaOut,
  queued_by: uuid,
  queued_at: time,
  left_at: time.nullable(),
  reason: DequeueReasonSchema.nullable(),
  /** The check or status that failed, or the files in conflict. */
  context: z.string().nullable(),
  /** A conflict: the CRs ahead of it when it was built (the agent is told once they landed). */
  ahead: z.array(uuid),
});

export const QueueRunSchema = z.strictObject({
  run_id: uuid,
  name: z.string(),
  status: z.enum(['queued', 'running', 'passed', 'failed', 'errored', 'cancelled']),
  log_url: z.string(),
});

export const QueueEntrySchema = z.strictObject({
  cr_id: uuid,
  number: z.number().int().positive(),
  title: z.string(),
  /** 1 is next to land. */
  position: z.number().int().positive(),
  head_sha: shaOut,
  queued_by: uuid,
  queued_at: time,
  /** waiting: not built yet; checking: its speculative result's checks run; passed: waiting to land with the ones before it; landing: the base is moving to it. */
  state: z.enum(['waiting', 'checking', 'passed', 'failed', 'landing']),
  /** The speculative merge result: the base with every CR before it and this one, as the base will hold it. */
  speculative_sha: shaOut.nullable(),
  /** What it was built on (the base, or the result before it). */
  speculative_base_sha: shaOut.nullable(),
  runs: z.array(QueueRunSchema),
});

export const QueueLeftSchema = z.strictObject({
  cr_id: uuid,
  number: z.number().int().positive(),
  title: z.string(),
  /** merged: landed through the queue; otherwise why it left. */
  outcome: z.union([z.literal('merged'), DequeueReasonSchema]),
  context: z.string().nullable(),
  head_sha: shaOut,
  at: time,
});

export const MergeQueueSchema = z.strictObject({
  base_ref: z.string(),
  /** `[merge_queue] enabled` in the manifest in force. */
  enabled: z.boolean(),
  max_batch: z.number().int().positive(),
  state: z.enum(['off', 'idle', 'checking', 'landing']),
  /** The base the speculative results are built on (null: nothing built). */
  base_sha: shaOut.nullable(),
  entries: z.array(QueueEntrySchema),
  /** The latest CRs to leave the queue, newest first. */
  recent: z.array(QueueLeftSchema),
  rebuilds: z.number().int().min(0),
  landed: z.number().int().min(0),
});
export const OneMergeQueue = z.strictObject({ merge_queue: MergeQueueSchema });

export const MergeQueueQuery = z.object({
  base: text(255).trim().min(1).optional(),
});

/** `DELETE .../merge-queue/:crId`: the entry as it now stands (left, by_person). */
export const DequeuedEntry = z.strictObject({ merge_queue: CrQueueSchema });

export type MergeQueueJson = z.infer<typeof MergeQueueSchema>;
