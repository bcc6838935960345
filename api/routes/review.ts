import { Router, type Request } from 'express';
import type { ApiDeps } from '../deps.js';
import { principalOf } from '../auth.js';
import { resolveProject } from '../project-access.js';
import { isBudgetRefusal } from '../../domain/budget/budget.js';
import { EmptyBody } from '../../contracts/common.js';
import { CreateCommentBody, ListCommentsQuery, ResolveCommentBody, type Comment, type ReviewState as ReviewStateJson } from '../../contracts/review.js';
import { isDomainError } from '../../domain/errors.js';
import type { CommentRow } from '../../services/review/comments.js';
import type { ReviewState } from '../../services/review/reviewed.js';

const iso = (v: unknown) => (v === null || v === undefined ? null : new Date(v as string).toISOString());

/** A comment row as the API writes it (contracts/review.ts). */
export function serializeComment(c: CommentRow): Comment {
  return {
    comment_id: c.comment_id,
    cr_id: c.cr_id,
    body: c.body,
    commit_sha: c.commit_sha,
    path: c.path,
    line: c.line,
    side: c.side,
    head_sha: c.head_sha,
    author: { kind: c.author_kind, user_id: c.author_id, session_id: c.session_id },
    answers_round: c.answers_round,
    resolved: c.resolved,
    resolved_by: c.resolved_by,
    resolved_at: iso(c.resolved_at),
    created_at: iso(c.created_at)!,
  };
}

export const serializeReview = (r: ReviewState): ReviewStateJson['review'] => ({ ...r });

/** `/v1/projects/:projectId/change-requests/:crId/{comments,review,reviewed,send-to-agent}`. */
export function reviewRoutes(deps: ApiDeps): Router {
  const r = Router({ mergeParams: true });
  const review = deps.services.review;
  const crs = deps.services.changeRequests;
  const ctx = async (req: Request) => ({ project: await resolveProject(deps, req), who: principalOf(req), ref: String(req.params.crId ?? '') });

  r.get('/:crId/comments', async (req, res) => {
    const { project, ref } = await ctx(req);
    const q = ListCommentsQuery.parse(req.query);
    const asOf = q.as_of ? new Date(q.as_of) : undefined;
    const cr = asOf ? await crs.get(project, ref, principalOf(req).user_id, { asOf }) : await crs.find(project.project_id, ref);
    res.json({ comments: (await review.comments(project, cr, asOf ? { asOf } : {})).map(serializeComment) });
  });

  r.post('/:crId/comments', async (req, res) => {
    const { project, who, ref } = await ctx(req);
    const body = CreateCommentBody.parse(req.body ?? {});
    res.status(201).json({ comment: serializeComment(await review.comment(project, ref, who, body)) });
  });

  r.patch('/:crId/comments/:commentId', async (req, res) => {
    const { project, who, ref } = await ctx(req);
    const body = ResolveCommentBody.parse(req.body ?? {});
    res.json({ comment: serializeComment(await review.resolve(project, ref, who, String(req.params.commentId), body.resolved)) });
  });

  r.get('/:crId/review', async (req, res) => {
    const { project, who, ref } = await ctx(req);
    res.json({ review: serializeReview(await review.state(project, ref, who)) });
  });

  r.post('/:crId/reviewed', async (req, res) => {
    const { project, who, ref } = await ctx(req);
    EmptyBody.parse(req.body ?? {});
    res.json({ review: serializeReview(await review.markReviewed(project, ref, who)) });
  });

  r.post('/:crId/send-to-agent', async (req, res) => {
    const { project, who, ref } = await ctx(req);
    EmptyBody.parse(req.body ?? {});
    try {
      const { prompt: _p, ...sent } = await review.sendToAgent(project, ref, who);
      res.status(202).json(sent);
    } catch (err) {
      if (isDomainError(err) && err.code === 'rate_limited' && !isBudgetRefusal(err)) res.set('Retry-After', '30'); // a spent budget waits for a person, not for time
      throw err;
    }
  });

  return r;
}
