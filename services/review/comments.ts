import { randomUUID } from 'node:crypto';
import { readStream } from '../../infra/event-store.js';
import { isDomainError, notFound, validationError } from '../../domain/errors.js';
import { commentableLines, streamIdOf, type ChangeRequest } from '../../domain/change-request/index.js';
import type { ProjectRecord } from '../../domain/project.js';
import { reviewQueries, type CommentRow } from '../../sql/queries/review.js';
import { projectReviewEvents, ReviewFolder } from '../../projections/review.js';
import { findCr, refreshCr, within, type CrDeps } from '../change-requests/service.js';
import { handleCommand } from '../change-requests/handle.js';
import { limitDiff } from '../change-requests/diff-limits.js';
import { assertMay, isAgent } from '../tokens/agent-policy.js';
import type { Principal } from '../tokens/service.js';
import { nowOf } from '../../lib/clock.js';

/**
 * Review comments on a CR: general, or on a line of the diff at a
 * commit of the CR's head. Each is a `ChangeRequestCommented` event on the CR stream,
 * projected into `cr_comments` in the same transaction. People resolve; an agent-grade
 * credential may comment on its own session's CR (its answer to a round sent to it) and
 * never resolve.
 */
export type { CommentRow };

export interface CommentInput {
  body: string;
  commit_sha?: string | undefined;
  path?: string | undefined;
  line?: number | undefined;
  side?: 'LEFT' | 'RIGHT' | undefined;
}

const now = (deps: Pick<CrDeps, 'now'>) => nowOf(deps);

/** Writes review events with their rows: the transactional path of the CR command handler. */
export const withReviewRows = (projectId: string) => ({
  inTx: (tx: Parameters<typeof projectReviewEvents>[0], _cr: ChangeRequest, events: Parameters<typeof projectReviewEvents>[2]) =>
    projectReviewEvents(tx, projectId, events),
});

/**
 * A line comment's anchor, checked against the CR's diff at `commit_sha` (base...commit):
 * the commit must be on the head branch, the path one of the diff's files, the line one a
 * hunk shows on that side. 400 with the field otherwise.
 */
async function checkAnchor(deps: CrDeps, project: ProjectRecord, cr: ChangeRequest, at: { commit_sha: string; path: string; line: number; side: 'LEFT' | 'RIGHT' }) {
  const repo = deps.repos.for(project);
  const base = cr.base_commit_sha;
  if (!base) throw validationError('The change request has no base commit to compare with yet; comment without a line.', [{ path: 'line', message: 'no diff' }]);
  const onHead = at.commit_sha === cr.head_commit_sha || (await repo.branchContains(cr.head_ref, at.commit_sha).catch(() => false));
  if (!onHead) throw validationError(`commit_sha ${at.commit_sha} is not a commit of the change request's head branch.`, [{ path: 'commit_sha', message: 'not on the head branch' }]);
  let diff;
  try {
    const ms = deps.diffTimeoutMs ?? 30_000;
    const r = await within(repo.diffCommits(base, at.commit_sha), ms);
    if (typeof r === 'symbol') throw validationError('The diff could not be read in time; try again.', [{ path: 'line', message: 'diff timed out' }]);
    diff = limitDiff(r, deps.diffLimits);
  } catch (err) {
    if (isDomainError(err) && err.code === 'not_found') throw validationError(`commit_sha ${at.commit_sha} is not in the repository.`, [{ path: 'commit_sha', message: 'unknown commit' }]);
    throw err;
  }
  const file = diff.files.find((f) => f.path === at.path);
  if (!file) throw validationError(`path '${at.path}' is not changed by this change request at ${at.commit_sha.slice(0, 7)}.`, [{ path: 'path', message: 'not in the diff' }]);
  if (file.binary || file.patch_truncated) throw validationError(`'${at.path}' has no lines to comment on (binary, or its diff is over the limits); comment without a line.`, [{ path: 'line', message: 'no lines' }]);
  const lines = commentableLines(diff.patch).get(at.path);
  if (!lines || !(at.side === 'LEFT' ? lines.left : lines.right).has(at.line)) {
    throw validationError(`line ${at.line} (${at.side}) of '${at.path}' is not in the diff's hunks.`, [{ path: 'line', message: 'not in the diff' }]);
  }
}

/** The round an agent's comment answers: the last round sent to its session, if not yet answered. */
async function roundAnswered(deps: CrDeps, project: ProjectRecord, cr: ChangeRequest, sessionId: string): Promise<number | null> {
  const events = await readStream(deps.db, streamIdOf(cr.cr_id));
  let round: number | null = null;
  for (const e of events) if (e.type === 'ChangeRequestSentToAgent' && (e.data as { session_id: string }).session_id === sessionId) round = (e.data as { round: number }).round;
  if (round === null) return null;
  const comments = await deps.db.rows<CommentRow>(reviewQueries.commentsOf(project.project_id, cr.cr_id));
  return comments.some((c) => c.answers_round === round) ? null : round;
}

export async function postComment(deps: CrDeps, project: ProjectRecord, ref: string, who: Principal, input: CommentInput): Promise<CommentRow> {
  let cr = await findCr(deps.db, project.project_id, ref);
  if (isAgent(who)) assertMay(who, { kind: 'cr.comment', cr });
  if ((input.path === undefined) !== (input.line === undefined)) {
    throw validationError('A line comment gives both path and line; a general comment neither.', [{ path: input.path === undefined ? 'path' : 'line', message: 'give path and line together' }]);
  }
  if (input.side !== undefined && input.line === undefined) throw validationError('side applies to a line comment only.', [{ path: 'side', message: 'needs path and line' }]);
  cr = await refreshCr(deps, project, cr, who.user_id);
  const commitSha = input.commit_sha ?? (input.line !== undefined ? cr.head_commit_sha : null);
  const side = input.line !== undefined ? (input.side ?? 'RIGHT') : null;
  if (input.path !== undefined && input.line !== undefined) {
    if (!commitSha) throw validationError('The head commit is not known yet; give commit_sha.', [{ path: 'commit_sha', message: 'required' }]);
    await checkAnchor(deps, project, cr, { commit_sha: commitSha, path: input.path, line: input.line, side: side! });
  } else if (commitSha && commitSha !== cr.head_commit_sha) {
    const on = await deps.repos.for(project).branchContains(cr.head_ref, commitSha).catch(() => false);
    if (!on) throw validationError(`commit_sha ${commitSha} is not a commit of the change request's head branch.`, [{ path: 'commit_sha', message: 'not on the head branch' }]);
  }
  const agent = isAgent(who);
  const commentId = randomUUID();
  const answers = agent && who.session_id ? await roundAnswered(deps, project, cr, who.session_id) : null;
  await handleCommand(
    deps,
    project.project_id,
    cr.cr_id,
    () => ({
      type: 'CommentOnChangeRequest',
      data: {
        comment_id: commentId,
        body: input.body,
        commit_sha: commitSha,
        path: input.path ?? null,
        line: input.line ?? null,
        side,
        head_sha: cr.head_commit_sha,
        author: { kind: agent ? 'agent' : 'user', user_id: who.user_id, session_id: agent ? who.session_id : null },
        answers_round: answers,
      },
      meta: { actor: who.user_id, now: now(deps) },
    }),
    withReviewRows(project.project_id),
  );
  return (await deps.db.one<CommentRow>(reviewQueries.commentById(project.project_id, cr.cr_id, commentId)))!;
}

/** A CR's comments, oldest first; `asOf`: as the log held them then (folded from the stream). */
export async function listComments(deps: Pick<CrDeps, 'db'>, project: ProjectRecord, cr: ChangeRequest, opts: { asOf?: Date } = {}): Promise<CommentRow[]> {
  if (!opts.asOf) return deps.db.rows<CommentRow>(reviewQueries.commentsOf(project.project_id, cr.cr_id));
  const folder = new ReviewFolder();
  for (const e of await readStream(deps.db, streamIdOf(cr.cr_id), { asOf: opts.asOf })) folder.apply(e);
  return folder.commentRows().sort((a, b) => a.created_at.localeCompare(b.created_at) || a.comment_id.localeCompare(b.comment_id));
}

/** Resolve (or unresolve) one comment: people only. */
export async function setResolved(deps: CrDeps, project: ProjectRecord, ref: string, who: Principal, commentId: string, resolved: boolean): Promise<CommentRow> {
  assertMay(who, { kind: 'cr.review' });
  const cr = await findCr(deps.db, project.project_id, ref);
  const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
  const row = UUID.test(commentId) ? await deps.db.one<CommentRow>(reviewQueries.commentById(project.project_id, cr.cr_id, commentId.toLowerCase())) : undefined;
  if (!row) throw notFound('Comment');
  await handleCommand(
    deps,
    project.project_id,
    cr.cr_id,
    () => ({ type: 'SetCommentResolved', data: { comment_id: row.comment_id, resolved, current: row.resolved }, meta: { actor: who.user_id, now: now(deps) } }),
    withReviewRows(project.project_id),
  );
  return (await deps.db.one<CommentRow>(reviewQueries.commentById(project.project_id, cr.cr_id, row.comment_id)))!;
}
