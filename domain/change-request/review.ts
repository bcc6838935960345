import { z } from 'zod';
import { DomainError, notFound, validationError } from '../errors.js';
import type { CommandMeta } from './commands.js';
import type { ChangeRequest, CrState } from './state.js';

/**
 * Review on the CR stream: comments (general or on a line of the
 * diff), their resolution, a person's "mark reviewed", and the rounds of feedback sent to
 * the CR's origin session. None of them changes the CR's own row (its JSON stays the
 * spec's); they are projected into `cr_comments` and `cr_reviews` (projections/review.ts).
 */
const sha = z.string().regex(/^[0-9a-f]{40}([0-9a-f]{24})?$/);
const uuid = z.uuid();
const time = z.iso.datetime({ offset: true });

/** Who wrote a comment: a person, or the agent of a session (an agent-grade credential). */
export const CommentAuthor = z.object({
  kind: z.enum(['user', 'agent']),
  user_id: uuid,
  session_id: z.string().nullable(),
});
export type CommentAuthor = z.infer<typeof CommentAuthor>;

export const ChangeRequestCommented = z.object({
  comment_id: uuid,
  body: z.string().min(1),
  /** The commit a line comment is anchored to (the head when it was written, unless given). */
  commit_sha: sha.nullable(),
  path: z.string().nullable(),
  line: z.number().int().positive().nullable(),
  side: z.enum(['LEFT', 'RIGHT']).nullable(),
  /** The CR's head when the comment was written: "changes since your last review" start there. */
  head_sha: sha.nullable(),
  author: CommentAuthor,
  /** The send-to-agent round this comment answers (an agent's first comment after a send). */
  answers_round: z.number().int().positive().nullable(),
  commented_at: time,
});

export const ChangeRequestCommentResolved = z.object({ comment_id: uuid, resolved_by: uuid, resolved_at: time });
export const ChangeRequestCommentUnresolved = z.object({ comment_id: uuid, unresolved_by: uuid, unresolved_at: time });

/** A person's explicit "mark reviewed" at a head. */
export const ChangeRequestReviewed = z.object({ reviewed_by: uuid, head_sha: sha.nullable(), reviewed_at: time });

/** Feedback delivered to the CR's origin session as one prompt (a round). */
export const ChangeRequestSentToAgent = z.object({
  round: z.number().int().positive(),
  session_id: z.string().min(1),
  comment_ids: z.array(uuid),
  /** Other feedback items sent (a failing check's summary ...), by kind and name. */
  items: z.array(z.object({ kind: z.string(), ref: z.string() })),
  head_sha: sha.nullable(),
  automatic: z.boolean(),
  /** How it reaches the session: prompted while running, or once its agent is ready (after a restart, or a start in progress). */
  delivery: z.enum(['prompted', 'restarted', 'queued']),
  sent_by: uuid,
  sent_at: time,
});

export const reviewEventSchemas = {
  ChangeRequestCommented,
  ChangeRequestCommentResolved,
  ChangeRequestCommentUnresolved,
  ChangeRequestReviewed,
  ChangeRequestSentToAgent,
} as const;

export type ReviewEventType = keyof typeof reviewEventSchemas;
export type ReviewEvent = { [K in ReviewEventType]: { type: K; data: z.infer<(typeof reviewEventSchemas)[K]> } }[ReviewEventType];

export const isReviewEventType = (t: string): boolean => Object.hasOwn(reviewEventSchemas, t);
export const isReviewEvent = <E extends { type: string }>(e: E): e is Extract<E, ReviewEvent> => Object.hasOwn(reviewEventSchemas, e.type);

// --- commands -----------------------------------------------------------------------------

export interface CommentOnChangeRequest {
  type: 'CommentOnChangeRequest';
  /** Anchoring (path/line against the diff) was checked by the caller, which read git. */
  data: Omit<z.infer<typeof ChangeRequestCommented>, 'commented_at'>;
  meta: CommandMeta;
}

export interface SetCommentResolved {
  type: 'SetCommentResolved';
  /** `current`: the comment's state as read by the caller (it exists on this CR). */
  data: { comment_id: string; resolved: boolean; current: boolean };
  meta: CommandMeta;
}

export interface MarkChangeRequestReviewed {
  type: 'MarkChangeRequestReviewed';
  data: { head_sha: string | null };
  meta: CommandMeta;
}

export interface SendChangeRequestToAgent {
  type: 'SendChangeRequestToAgent';
  data: Omit<z.infer<typeof ChangeRequestSentToAgent>, 'sent_by' | 'sent_at'>;
  meta: CommandMeta;
}

export type ReviewCommand = CommentOnChangeRequest | SetCommentResolved | MarkChangeRequestReviewed | SendChangeRequestToAgent;

const REVIEW_COMMANDS = new Set(['CommentOnChangeRequest', 'SetCommentResolved', 'MarkChangeRequestReviewed', 'SendChangeRequestToAgent']);
export const isReviewCommand = <C extends { type: string }>(c: C): c is Extract<C, ReviewCommand> => REVIEW_COMMANDS.has(c.type);

/** The review half of the CR decider. Pure. */
export function decideReview(command: ReviewCommand, state: CrState): ReviewEvent[] {
  const cr = existing(state);
  const at = command.meta.now.toISOString();
  const actor = command.meta.actor;
  switch (command.type) {
    case 'CommentOnChangeRequest': {
      const d = command.data;
      if (d.body.trim() === '') throw validationError('body must not be empty.', [{ path: 'body', message: 'must not be empty' }]);
      return [{ type: 'ChangeRequestCommented', data: { ...d, commented_at: at } }];
    }
    case 'SetCommentResolved': {
      const { comment_id, resolved, current } = command.data;
      if (resolved === current) return [];
      return resolved
        ? [{ type: 'ChangeRequestCommentResolved', data: { comment_id, resolved_by: actor, resolved_at: at } }]
        : [{ type: 'ChangeRequestCommentUnresolved', data: { comment_id, unresolved_by: actor, unresolved_at: at } }];
    }
    case 'MarkChangeRequestReviewed':
      return [{ type: 'ChangeRequestReviewed', data: { reviewed_by: actor, head_sha: command.data.head_sha, reviewed_at: at } }];
    case 'SendChangeRequestToAgent': {
      if (cr.status !== 'open') {
        throw new DomainError('conflict', 'Conflict', `Change request #${cr.number} is ${cr.status}; only an open one is sent to its agent.`, { status: cr.status });
      }
      return [{ type: 'ChangeRequestSentToAgent', data: { ...command.data, sent_by: actor, sent_at: at } }];
    }
    default: {
      const unhandled: never = command;
      throw new Error(`unhandled command ${(unhandled as { type: string }).type}`);
    }
  }
}

function existing(state: CrState): ChangeRequest {
  if (state === null) throw notFound('Change request');
  return state;
}
