import type { Executor } from '../infra/db/db.js';
import type { StoredEvent } from '../infra/event-store.js';
import { isReviewEvent, isReviewEventType, parseChangeRequestEvent, STREAM_TYPE, type ChangeRequestEvent } from '../domain/change-request/index.js';
import { reviewQueries, type CommentRow, type ReviewRow } from '../sql/queries/review.js';

/**
 * The review projection: `cr_comments` (one row per comment, with its resolution) and
 * `cr_reviews` (per person and CR, the head they last reviewed: their last comment's or an
 * explicit mark). One function says what an event changes (`changesOf`); the inline
 * projector runs those changes as statements in the append's transaction, the rebuild
 * applies them to rows in memory, so `rebuild --verify` compares like with like.
 */
export type ReviewChange =
  | { op: 'comment'; row: CommentRow }
  | { op: 'resolve'; comment_id: string; resolved: boolean; by: string | null; at: string | null }
  | { op: 'review'; row: ReviewRow };

const crIdOf = (streamId: string) => streamId.replace(/^cr-/, '');

export function changesOf(projectId: string, crId: string, event: ChangeRequestEvent): ReviewChange[] {
  if (!isReviewEvent(event)) return [];
  switch (event.type) {
    case 'ChangeRequestCommented': {
      const d = event.data;
      const row: CommentRow = {
        comment_id: d.comment_id,
        project_id: projectId,
        cr_id: crId,
        body: d.body,
        commit_sha: d.commit_sha,
        path: d.path,
        line: d.line,
        side: d.side,
        head_sha: d.head_sha,
        author_kind: d.author.kind,
        author_id: d.author.user_id,
        session_id: d.author.session_id,
        answers_round: d.answers_round,
        resolved: false,
        resolved_by: null,
        resolved_at: null,
        created_at: d.commented_at,
      };
      // A person's comment is a review of the head they saw; an agent's is not.
      const review: ReviewChange[] = d.author.kind === 'user' ? [{ op: 'review', row: { project_id: projectId, cr_id: crId, user_id: d.author.user_id, head_sha: d.head_sha, reviewed_at: d.commented_at } }] : [];
      return [{ op: 'comment', row }, ...review];
    }
    case 'ChangeRequestCommentResolved':
      return [{ op: 'resolve', comment_id: event.data.comment_id, resolved: true, by: event.data.resolved_by, at: event.data.resolved_at }];
    case 'ChangeRequestCommentUnresolved':
      return [{ op: 'resolve', comment_id: event.data.comment_id, resolved: false, by: null, at: null }];
    case 'ChangeRequestReviewed':
      return [{ op: 'review', row: { project_id: projectId, cr_id: crId, user_id: event.data.reviewed_by, head_sha: event.data.head_sha, reviewed_at: event.data.reviewed_at } }];
    case 'ChangeRequestSentToAgent':
      return [];
  }
}

/** Inline: the review rows of `events` (just appended to one CR's stream), in the same transaction. */
export async function projectReviewEvents(tx: Executor, projectId: string, events: StoredEvent[]): Promise<void> {
  for (const e of events) {
    if (!isReviewEventType(e.type)) continue;
    for (const c of changesOf(projectId, crIdOf(e.stream_id), parseChangeRequestEvent(e))) {
      if (c.op === 'comment') await tx.run(reviewQueries.insertComment(c.row));
      else if (c.op === 'resolve') await tx.run(reviewQueries.setResolved(c.comment_id, c.resolved, c.by, c.at));
      else await tx.run(reviewQueries.upsertReview(c.row));
    }
  }
}

/** Folds the log's review events into rows (rebuilds). */
export class ReviewFolder {
  readonly streamType = STREAM_TYPE;
  private readonly comments = new Map<string, CommentRow>();
  private readonly reviews = new Map<string, ReviewRow>();

  apply(e: StoredEvent): void {
    if (!e.project_id || !e.stream_id.startsWith('cr-') || !isReviewEventType(e.type)) return;
    const event = parseChangeRequestEvent(e);
    for (const c of changesOf(e.project_id, crIdOf(e.stream_id), event)) {
      if (c.op === 'comment') this.comments.set(c.row.comment_id, c.row);
      else if (c.op === 'resolve') {
        const row = this.comments.get(c.comment_id);
        if (row) this.comments.set(c.comment_id, { ...row, resolved: c.resolved, resolved_by: c.by, resolved_at: c.at });
      } else this.reviews.set(`${c.row.cr_id}/${c.row.user_id}`, c.row);
    }
  }

  commentRows(): CommentRow[] {
    return [...this.comments.values()];
  }

  reviewRows(): ReviewRow[] {
    return [...this.reviews.values()];
  }
}
