import type { ProjectRecord } from '../../domain/project.js';
import type { ChangeRequest } from '../../domain/change-request/index.js';
import { reviewQueries, type CommentRow, type ReviewRow } from '../../sql/queries/review.js';
import { findCr, refreshCr, within, type CrDeps } from '../change-requests/service.js';
import { handleCommand } from '../change-requests/handle.js';
import { limitDiff, type LimitedDiff } from '../change-requests/diff-limits.js';
import { assertMay } from '../tokens/agent-policy.js';
import type { Principal } from '../tokens/service.js';
import { withReviewRows } from './comments.js';
import { nowOf } from '../../lib/clock.js';

/**
 * "Changes since your last review": per person, the head they last
 * reviewed is their last comment's head or the head of an explicit "mark reviewed"
 * (`ChangeRequestReviewed`); what changed since is the diff from that head to the CR's
 * head now.
 */
export interface ReviewState {
  user_id: string;
  reviewed_head_sha: string | null;
  reviewed_at: string | null;
  head_sha: string | null;
  /** The head moved since the person's last review (false when never reviewed). */
  changed: boolean;
  /** reviewed head...head now, when it moved and both are readable; else null. */
  changes: LimitedDiff | null;
}

const now = (deps: Pick<CrDeps, 'now'>) => nowOf(deps);
const iso = (v: unknown) => (v === null || v === undefined ? null : new Date(v as string).toISOString());

/** A CR's comments and the reader's review state, the review row read with the comments in one statement (the CR page). */
export async function reviewPageOf(deps: CrDeps, project: ProjectRecord, cr: ChangeRequest, userId: string): Promise<{ comments: CommentRow[]; review: ReviewState }> {
  const r = (await deps.db.one<{ comments: CommentRow[]; review: ReviewRow | null }>(reviewQueries.pageOf(project.project_id, cr.cr_id, userId)))!;
  return { comments: r.comments, review: await reviewStateOf(deps, project, cr, userId, r.review) };
}

export async function reviewStateOf(deps: CrDeps, project: ProjectRecord, cr: ChangeRequest, userId: string, known?: ReviewRow | null): Promise<ReviewState> {
  const row = known !== undefined ? known : await deps.db.one<ReviewRow>(reviewQueries.reviewOf(cr.cr_id, userId));
  const reviewed = row?.head_sha ?? null;
  const head = cr.head_commit_sha;
  const changed = !!row && !!head && reviewed !== head;
  let changes: LimitedDiff | null = null;
  if (changed && reviewed && head) {
    try {
      const r = await within(deps.repos.for(project).diffCommits(reviewed, head), deps.diffTimeoutMs ?? 30_000);
      if (typeof r !== 'symbol') changes = limitDiff(r, deps.diffLimits);
    } catch (err) {
      deps.logger.debug({ cr_id: cr.cr_id, err: (err as Error).message }, 'changes since review unavailable');
    }
  }
  return { user_id: userId, reviewed_head_sha: reviewed, reviewed_at: iso(row?.reviewed_at), head_sha: head, changed, changes };
}

export async function getReviewState(deps: CrDeps, project: ProjectRecord, ref: string, who: Principal): Promise<ReviewState> {
  const cr = await refreshCr(deps, project, await findCr(deps.db, project.project_id, ref), who.user_id);
  return reviewStateOf(deps, project, cr, who.user_id);
}

/** "Mark reviewed" at the CR's head now: people only. */
export async function markReviewed(deps: CrDeps, project: ProjectRecord, ref: string, who: Principal): Promise<ReviewState> {
  assertMay(who, { kind: 'cr.review' });
  const cr = await refreshCr(deps, project, await findCr(deps.db, project.project_id, ref), who.user_id);
  await handleCommand(
    deps,
    project.project_id,
    cr.cr_id,
    () => ({ type: 'MarkChangeRequestReviewed', data: { head_sha: cr.head_commit_sha }, meta: { actor: who.user_id, now: now(deps) } }),
    withReviewRows(project.project_id),
  );
  return reviewStateOf(deps, project, cr, who.user_id);
}
