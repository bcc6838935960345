import type { ChangeRequest } from '../../domain/change-request/index.js';
import type { ProjectRecord } from '../../domain/project.js';
import type { Db } from '../../infra/db/db.js';
import { reviewQueries, type CommentRow } from '../../sql/queries/review.js';

/**
 * What "Send to agent" delivers: feedback items, each from a source. Review comments are
 * one source (the unresolved ones people wrote); the checks feature adds another (a
 * failing check's summary) by passing its source in `ReviewDeps.feedbackSources`: this
 * is the seam, nothing here knows about checks.
 */
export interface FeedbackItem {
  /** `comment`, `check`, ... */
  kind: string;
  /** What identifies it in the round's event (a comment id, a check name). */
  ref: string;
  /** One block of the prompt, in Markdown. */
  text: string;
}

export interface FeedbackContext {
  db: Db;
  project: ProjectRecord;
  cr: ChangeRequest;
}

export type FeedbackSource = (cx: FeedbackContext) => Promise<FeedbackItem[]>;

const quote = (body: string) => body.split('\n').map((l) => `> ${l}`).join('\n');

/** The text of one comment as the agent reads it. */
export function commentItemText(c: Pick<CommentRow, 'path' | 'line' | 'side' | 'commit_sha' | 'body'>): string {
  const where = c.path
    ? `On \`${c.path}\` line ${c.line} (${c.side === 'LEFT' ? 'old side, before the change' : 'new side'}${c.commit_sha ? `, at ${c.commit_sha.slice(0, 7)}` : ''}):`
    : 'General comment:';
  return `${where}\n${quote(c.body)}`;
}

/** The unresolved comments people wrote (an agent's own answers are not fed back to it). */
export const commentFeedback: FeedbackSource = async ({ db, project, cr }) => {
  const rows = await db.rows<CommentRow>(reviewQueries.commentsOf(project.project_id, cr.cr_id));
  return rows.filter((c) => !c.resolved && c.author_kind === 'user').map((c) => ({ kind: 'comment', ref: c.comment_id, text: commentItemText(c) }));
};

export async function collectFeedback(sources: FeedbackSource[], cx: FeedbackContext): Promise<FeedbackItem[]> {
  return (await Promise.all(sources.map((s) => s(cx)))).flat();
}

/** The one prompt a round sends: every item, what to do, and how to answer (once, as one comment). */
export function feedbackPrompt(cr: ChangeRequest, items: FeedbackItem[]): string {
  const list = items.map((it, i) => `${i + 1}. ${it.text.replace(/\n/g, '\n   ')}`).join('\n\n');
  return [
    `Review feedback on change request #${cr.number} "${cr.title}" (your branch \`${cr.head_ref}\`${cr.head_commit_sha ? `, head ${cr.head_commit_sha.slice(0, 7)}` : ''}):`,
    '',
    list,
    '',
    'Address every item: commit the fixes on this same branch and push them (`git push origin HEAD`). Do not open a new change request and do not merge.',
    `Then answer once, as one comment on the change request, saying what you changed: \`svc cr comment ${cr.number} --body "<your answer>"\`.`,
  ].join('\n');
}
