import { z } from 'zod';
import { sha, shaOut, storable, text, time, uuid } from './common.js';
import { DiffSchema } from './change-requests.js';

/** Review comments, reviews and rounds sent to the agent (docs/api.md "Review"). */

export const CreateCommentBody = z.strictObject({
  body: text(65_536).refine((v) => v.trim() !== '', 'must not be empty'),
  commit_sha: sha.optional(),
  path: z.string().min(1).max(4096).refine(storable, 'must not contain NUL or unpaired surrogates').optional(),
  line: z.number().int().min(1).max(100_000_000).optional(),
  side: z.enum(['LEFT', 'RIGHT']).optional(),
});
export type CreateCommentInput = z.input<typeof CreateCommentBody>;

export const ResolveCommentBody = z.strictObject({ resolved: z.boolean() });

export const ListCommentsQuery = z.object({ as_of: z.iso.datetime({ offset: true }).optional() });

export const CommentSchema = z.strictObject({
  comment_id: uuid,
  cr_id: uuid,
  body: z.string(),
  commit_sha: shaOut.nullable(),
  path: z.string().nullable(),
  line: z.number().int().nullable(),
  side: z.enum(['LEFT', 'RIGHT']).nullable(),
  /** The CR's head when the comment was written. */
  head_sha: shaOut.nullable(),
  author: z.strictObject({ kind: z.enum(['user', 'agent']), user_id: uuid, session_id: z.string().nullable() }),
  /** The send-to-agent round an agent's comment answers. */
  answers_round: z.number().int().nullable(),
  resolved: z.boolean(),
  resolved_by: uuid.nullable(),
  resolved_at: time.nullable(),
  created_at: time,
});
export type Comment = z.infer<typeof CommentSchema>;

export const OneComment = z.strictObject({ comment: CommentSchema });
export const CommentList = z.strictObject({ comments: z.array(CommentSchema) });

/** "Changes since your last review", for the caller. */
export const ReviewStateSchema = z.strictObject({
  review: z.strictObject({
    user_id: uuid,
    reviewed_head_sha: shaOut.nullable(),
    reviewed_at: time.nullable(),
    head_sha: shaOut.nullable(),
    changed: z.boolean(),
    changes: DiffSchema.nullable(),
  }),
});
export type ReviewState = z.infer<typeof ReviewStateSchema>;

export const SentToAgentSchema = z.strictObject({
  round: z.number().int().min(1),
  session_id: z.string(),
  items: z.array(z.strictObject({ kind: z.string(), ref: z.string() })),
  head_sha: shaOut.nullable(),
  delivery: z.enum(['prompted', 'restarted', 'queued']),
});
export type SentToAgent = z.infer<typeof SentToAgentSchema>;
