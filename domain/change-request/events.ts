import { z } from 'zod';
import { eventCatalog, type EventOf } from '../event-catalog.js';
import { reviewEventSchemas } from './review.js';
import { checkEventSchemas } from './check-events.js';

/**
 * The CR stream's events. Types are versioned by name: a change of shape is a new type
 * (or an upcaster in `parseEvent`), never an edit of stored rows. Times are ISO strings
 * taken from the command's clock, so replaying the log gives the same rows.
 */
const sha = z.string().regex(/^[0-9a-f]{40}([0-9a-f]{24})?$/);
const uuid = z.uuid();
const time = z.iso.datetime({ offset: true });

export const ChangeRequestOpened = z.object({
  cr_id: uuid,
  account_id: uuid,
  project_id: uuid,
  number: z.number().int().positive(),
  title: z.string().min(1),
  description: z.string(),
  base_ref: z.string().min(1),
  head_ref: z.string().min(1),
  head_commit_sha: sha.nullable(),
  base_commit_sha: sha.nullable(),
  origin_session_id: z.string().nullable(),
  created_by: uuid,
  metadata: z.record(z.string(), z.unknown()),
  created_at: time,
});

export const ChangeRequestRefreshed = z.object({
  head_commit_sha: sha.nullable(),
  base_commit_sha: sha.nullable(),
  refreshed_at: time,
});

export const ChangeRequestEdited = z.object({
  title: z.string().min(1).optional(),
  description: z.string().optional(),
  edited_by: uuid,
  edited_at: time,
});

export const ChangeRequestMerged = z.object({
  merged_by: uuid,
  merged_at: time,
  strategy: z.enum(['fast-forward', 'merge-commit', 'up-to-date']),
  base_commit_sha: sha,
  head_commit_sha: sha,
  merge_commit_sha: sha,
  /** Landed by the merge queue (absent: a direct merge or merge-when-green on its own pair). */
  via: z.literal('queue').optional(),
  /** The check runs that passed on exactly `merge_commit_sha` (the queue's merges). */
  check_runs: z.array(uuid).max(100).optional(),
});

export const ChangeRequestClosed = z.object({ closed_by: uuid, closed_at: time });

/** Opened on the head branch of exactly one other open CR: that CR is its parent (domain/change-request/stack.ts). */
export const ChangeRequestStacked = z.object({ parent_cr_id: uuid, stacked_at: time });

/**
 * The CR's base changed: by a person (`PATCH base_ref`, their id), or by the server
 * (`"system"`) when its parent merged and it moved onto the parent's base. It carries the
 * new base's tip (the pair the checks then run on) and the parent the new base gives.
 */
export const ChangeRequestRetargeted = z.object({
  from: z.string().min(1),
  to: z.string().min(1),
  by: z.union([z.literal('system'), uuid]),
  parent_cr_id: uuid.nullable(),
  base_commit_sha: sha.nullable(),
  retargeted_at: time,
});
export const ChangeRequestReopened = z.object({ reopened_by: uuid, reopened_at: time });

export const changeRequestEventSchemas = {
  ChangeRequestOpened,
  ChangeRequestRefreshed,
  ChangeRequestEdited,
  ChangeRequestMerged,
  ChangeRequestClosed,
  ChangeRequestReopened,
  ChangeRequestStacked,
  ChangeRequestRetargeted,
  // Review comments, marks and rounds sent to the agent (review.ts): they leave the CR row as it is.
  ...reviewEventSchemas,
  ...checkEventSchemas,
} as const;

const catalog = eventCatalog('change-request', changeRequestEventSchemas);

/** A discriminated union: `{type, data}` for every CR event type. */
export type ChangeRequestEvent = EventOf<typeof changeRequestEventSchemas>;
/** Validates a stored event on the way in from the log (the place for upcasters). */
export const parseChangeRequestEvent = catalog.parse;

export const STREAM_TYPE = 'change_request';
export const streamIdOf = (crId: string): string => `cr-${crId}`;
