import { z } from 'zod';
import { eventCatalog, type EventOf } from '../event-catalog.js';

/**
 * The merge queue of one (project, base branch): its own stream, `mq-<project>:<base>`.
 * Which CRs wait is on their own streams (ChangeRequestQueued/Dequeued); this stream holds
 * what the queue built and did with them: the speculative merge results in order (each on
 * the one before it), the compare-and-swap it is about to make (recorded before the base
 * moves, so a worker that dies mid-way finds it), what landed, and every rebuild.
 */
const sha = z.string().regex(/^[0-9a-f]{40}([0-9a-f]{24})?$/);
const uuid = z.uuid();
const time = z.iso.datetime({ offset: true });
const baseRef = z.string().min(1).max(255);

/** One speculative merge result: `merge_sha` = `base_sha` + the CR's head, as a direct merge would make it. */
export const BuiltEntry = z.object({
  cr_id: uuid,
  number: z.number().int().positive(),
  head_sha: sha,
  base_sha: sha,
  merge_sha: sha,
  strategy: z.enum(['fast-forward', 'merge-commit', 'up-to-date']),
});

export const MergeQueueEntryBuilt = BuiltEntry.extend({ project_id: uuid, base_ref: baseRef, built_at: time });
export const MergeQueueRebuilt = z.object({
  project_id: uuid,
  base_ref: baseRef,
  /** base_changed: the base moved outside the queue; entry_left: a built entry left (the ones after it are built again). */
  reason: z.enum(['base_changed', 'entry_left']),
  /** How many built entries stand (the first ones); the rest are built again. */
  kept: z.number().int().min(0),
  rebuilt_at: time,
});
/** Recorded before the base moves: the first `count` entries land, the base going from `base_sha` to `merge_sha`. */
export const MergeQueueLanding = z.object({ count: z.number().int().positive(), base_sha: sha, merge_sha: sha, at: time });
export const MergeQueueLanded = z.object({ count: z.number().int().positive(), merge_sha: sha, landed_at: time });
/** A conflict held back until the CRs ahead of it are settled (landed or left), then sent to its agent. */
export const MergeQueueConflictHeld = z.object({ cr_id: uuid, ahead: z.array(uuid).max(64), at: time });
export const MergeQueueConflictReleased = z.object({ cr_id: uuid, landed: z.array(uuid).max(64), at: time });

export const mergeQueueEventSchemas = {
  MergeQueueEntryBuilt,
  MergeQueueRebuilt,
  MergeQueueLanding,
  MergeQueueLanded,
  MergeQueueConflictHeld,
  MergeQueueConflictReleased,
} as const;

const catalog = eventCatalog('merge-queue', mergeQueueEventSchemas);

export type MergeQueueEvent = EventOf<typeof mergeQueueEventSchemas>;
export type BuiltEntry = z.infer<typeof BuiltEntry>;
export const parseMergeQueueEvent = catalog.parse;

export const MERGE_QUEUE_STREAM_TYPE = 'merge_queue';
export const MERGE_QUEUE_STREAM_PREFIX = 'mq-';
export const mergeQueueStreamId = (projectId: string, baseRef: string): string => `${MERGE_QUEUE_STREAM_PREFIX}${projectId}:${baseRef}`;
