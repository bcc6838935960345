import { z } from 'zod';
import { shaOut, text, time, uuid } from './common.js';
import { CrQueueSchema } from './merge-queue.js';

/** Checks, commit statuses and merge when green (docs/checks.md). */

export const CheckRunSchema = z.strictObject({
  run_id: uuid,
  name: z.string(),
  status: z.enum(['queued', 'running', 'passed', 'failed', 'errored', 'cancelled']),
  base_sha: shaOut,
  head_sha: shaOut,
  /** The commit the check ran on: the merge result (the head for a fast-forward); null when the pair does not merge. */
  merge_sha: shaOut.nullable(),
  started_at: time.nullable(),
  finished_at: time.nullable(),
  exit_code: z.number().int().nullable(),
  /** Why it failed, errored or was cancelled, in the server's words (never the check's output). */
  reason: z.string().nullable(),
  /** text/plain; the output, bounded, secret values masked. */
  log_url: z.string(),
});

export const StatusStateSchema = z.enum(['pending', 'success', 'failure', 'error']);

export const CommitStatusSchema = z.strictObject({
  context: z.string(),
  state: StatusStateSchema,
  description: z.string().nullable(),
  target_url: z.string().nullable(),
  sha: shaOut,
  /** Named by `[review] required_statuses`: merge when green waits for its success. */
  required: z.boolean(),
  /** Null for a required context nobody reported yet (then `state` is pending). */
  created_at: time.nullable(),
  updated_at: time.nullable(),
});

export const AutoMergeSchema = z.strictObject({
  status: z.enum(['pending', 'merged', 'cancelled']),
  head_sha: shaOut,
  requested_by: uuid,
  requested_at: time,
  finished_at: time.nullable(),
  reason: z.string().nullable(),
});

export const CrChecksSchema = z.strictObject({
  checks: z.array(CheckRunSchema),
  statuses: z.array(CommitStatusSchema),
  auto_merge: AutoMergeSchema.nullable(),
  /** The CR's place in the merge queue (null: never queued; absent from servers before the queue). */
  merge_queue: CrQueueSchema.nullable().optional(),
});
export type CrChecks = z.infer<typeof CrChecksSchema>;

export const CrChecksQuery = z.object({
  as_of: z.iso.datetime({ offset: true }).optional(),
});

/** Only http(s): a status link is rendered as a link; `javascript:` and the like never are. */
const httpUrl = text(2048).refine((v) => {
  try {
    const u = new URL(v);
    return u.protocol === 'http:' || u.protocol === 'https:';
  } catch {
    return false;
  }
}, 'target_url must be an http(s) URL');

/** GitHub's commit-status shape. */
export const PostStatusBody = z.strictObject({
  context: text(255).trim().min(1).default('default'),
  state: StatusStateSchema,
  description: text(1024).nullable().optional(),
  target_url: httpUrl.nullable().optional(),
});
export const OneStatus = z.strictObject({ status: CommitStatusSchema });

/** `202` of `POST .../merge {"when":"checks_pass"}`; with the merge queue on, also the CR's queue entry (contracts/merge-queue.ts). */
export const AutoMergeAccepted = z.strictObject({ auto_merge: AutoMergeSchema, merge_queue: CrQueueSchema.optional() });
