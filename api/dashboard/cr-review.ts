import { Router, type Request, type Response } from 'express';
import { z } from 'zod';
import type { ChangeRequest } from '../../domain/change-request/index.js';
import { isDomainError } from '../../domain/errors.js';
import type { ProjectRecord } from '../../domain/project.js';
import type { Principal } from '../../services/tokens/service.js';
import type { CommentRow } from '../../services/review/comments.js';
import type { ReviewState } from '../../services/review/reviewed.js';
import { CreateCommentBody } from '../../contracts/review.js';
import type { LimitedDiff } from '../../services/change-requests/diff-limits.js';
import type { ApiDeps } from '../deps.js';
import { callerOf, projectOf, requireCsrf } from './context.js';
import { renderDiff, type LineAnnotator } from './diff-view.js';
import { html, raw, shortSha, timeAgo, type Html } from './html.js';
import { respond } from './shared.js';

/**
 * The review part of a CR page: line comments at their line of the
 * diff, general comments, a form to comment (on a line or not), Resolve, "Send to agent",
 * "Mark reviewed" and the changes since the reader's last review. Every body is escaped
 * (the `html` tag); nothing a comment says becomes markup.
 */
export interface ReviewView {
  comments: CommentRow[];
  review: ReviewState | null;
}

/** The signed-in person as the review services' principal (a person: never agent-grade). */
const personOf = (userId: string): Principal => ({ token_id: '', user_id: userId, email: '', user_name: '', project_id: null, grade: 'person', sandbox_id: null, session_id: null });

export async function loadReview(deps: ApiDeps, project: ProjectRecord, cr: ChangeRequest, userId: string, asOf?: Date): Promise<ReviewView> {
  const review = deps.services.review;
  if (asOf) return { comments: await review.comments(project, cr, { asOf }), review: null };
  return review.page(project, cr, userId);
}

const iso = (v: unknown) => new Date(v as string).toISOString();

function commentBlock(c: CommentRow, csrf: string, base: string, asOf: boolean): Html {
  const who = c.author_kind === 'agent' ? html`<span class="badge">agent</span> session ${String(c.session_id ?? '').slice(0, 8)}` : html`${c.author_id.slice(0, 8)}`;
  const toggle = asOf
    ? html``
    : html`<form method="post" action="${base}/comments/${c.comment_id}/resolve" data-fetch class="inline"><input type="hidden" name="_csrf" value="${csrf}"><input type="hidden" name="resolved" value="${c.resolved ? 'false' : 'true'}"><button type="submit">${c.resolved ? 'Unresolve' : 'Resolve'}</button></form>`;
  return html`<div class="comment${c.resolved ? ' resolved' : ''}" data-comment-id="${c.comment_id}" data-resolved="${String(c.resolved)}">
<p class="muted">${who} · ${timeAgo(iso(c.created_at))}${c.path ? html` · <code>${c.path}:${String(c.line)}</code>${c.side === 'LEFT' ? ' (old)' : ''}` : ''}${c.answers_round ? html` · answers round ${String(c.answers_round)}` : ''}${c.resolved ? ' · resolved' : ''}</p>
<pre class="text comment-body">${c.body}</pre>${toggle}</div>`;
}

/** Line comments under their line of the diff (for `renderDiff`). */
export function lineAnnotator(view: ReviewView, csrf: string, base: string): LineAnnotator {
  const byLine = new Map<string, CommentRow[]>();
  for (const c of view.comments) {
    if (!c.path || c.line === null) continue;
    const k = `${c.side ?? 'RIGHT'}\u0000${c.line}\u0000${c.path}`;
    byLine.set(k, [...(byLine.get(k) ?? []), c]);
  }
  return (path, side, line) => {
    const here = byLine.get(`${side}\u0000${line}\u0000${path}`);
    if (!here) return '';
    return html`<tr class="line-comments" data-path="${path}" data-side="${side}" data-line="${line}"><td></td><td></td><td>${here.map((c) => commentBlock(c, csrf, base, false))}</td></tr>`.value;
  };
}

export function diffWithComments(diff: LimitedDiff, cr: ChangeRequest, view: ReviewView, csrf: string, base: string): Html {
  return renderDiff(diff, cr.number, lineAnnotator(view, csrf, base));
}

/** The Review section: changes since the last review, general comments, the form, Send to agent. */
export function reviewSection(cr: ChangeRequest, view: ReviewView, diff: LimitedDiff | null, csrf: string, base: string, asOf = false): Html {
  const hidden = html`<input type="hidden" name="_csrf" value="${csrf}">`;
  const general = view.comments.filter((c) => !c.path);
  const unresolved = view.comments.filter((c) => !c.resolved && c.author_kind === 'user').length;
  const r = view.review;
  const since = !r
    ? html``
    : !r.reviewed_head_sha
      ? html`<p class="muted" data-review="never">You have not reviewed this change request yet.</p>`
      : !r.changed
        ? html`<p class="muted" data-review="current">No changes since your last review (<code>${shortSha(r.reviewed_head_sha)}</code>).</p>`
        : html`<div class="since" data-review="changed"><p><strong>Changes since your last review</strong> <code>${shortSha(r.reviewed_head_sha)}</code>…<code>${shortSha(r.head_sha)}</code>${r.changes ? html` <span class="plus">+${String(r.changes.additions)}</span> <span class="minus">−${String(r.changes.deletions)}</span>` : ''}</p>
${r.changes ? html`<ul>${r.changes.files.map((f) => html`<li><code>${f.path}</code></li>`)}</ul>` : html`<p class="muted">The change cannot be shown right now.</p>`}</div>`;
  const files = diff ? diff.files.filter((f) => !f.binary).map((f) => f.path) : [];
  const form = asOf
    ? html``
    : html`<form method="post" action="${base}/comments" class="stack" data-fetch id="comment-form">${hidden}
<label>Comment <textarea name="body" rows="4" required maxlength="65536"></textarea></label>
<details><summary>On a line of the diff</summary>
<label>File <select name="path"><option value="">(general comment)</option>${files.map((p) => html`<option value="${p}">${p}</option>`)}</select></label>
<label>Line <input name="line" type="number" min="1" inputmode="numeric"></label>
<label>Side <select name="side"><option value="RIGHT">new (right)</option><option value="LEFT">old (left)</option></select></label>
${diff ? html`<input type="hidden" name="commit_sha" value="${diff.head_sha}">` : ''}</details>
<button type="submit">Comment</button></form>`;
  const actions = asOf
    ? html``
    : html`<div class="actions">
${cr.status === 'open' && cr.origin_session_id ? html`<form method="post" action="${base}/send-to-agent" data-fetch>${hidden}<button type="submit" ${unresolved ? '' : 'disabled'}>Send to agent (${String(unresolved)})</button></form>` : ''}
<form method="post" action="${base}/reviewed" data-fetch>${hidden}<button type="submit">Mark reviewed</button></form></div>`;
  return html`<section aria-labelledby="review-h" data-live="cr-review"><h2 id="review-h">Review <span class="muted">${String(view.comments.length)} comment${view.comments.length === 1 ? '' : 's'}, ${String(unresolved)} unresolved</span></h2>
${since}
<div class="comments general">${general.map((c) => commentBlock(c, csrf, base, asOf))}</div>
${form}${actions}</section>`;
}

const CommentForm = z.object({
  _csrf: z.string().optional(),
  body: z.string().max(65_536),
  path: z.string().max(4096).optional(),
  line: z.string().max(12).optional(),
  side: z.enum(['LEFT', 'RIGHT']).optional(),
  commit_sha: z.string().max(64).optional(),
});
const ResolveForm = z.object({ _csrf: z.string().optional(), resolved: z.enum(['true', 'false']) });

export function crReviewRoutes(deps: ApiDeps): Router {
  const r = Router({ mergeParams: true });
  const review = deps.services.review;
  const crBase = (req: Request) => `/projects/${encodeURIComponent(String(req.params.projectId))}/change-requests/${encodeURIComponent(String(req.params.n))}`;
  const n = (req: Request) => String(req.params.n);
  const me = (res: Response) => personOf(callerOf(res).user_id);
  /** A plain form comes back to the page with the refusal; the page's script gets the API's body. */
  const refusalBack = (req: Request, res: Response, e: unknown) => {
    if (isDomainError(e) && e.code !== 'not_found' && !(req.headers.accept ?? '').includes('application/json')) {
      // A fixed message per refusal: nothing of the request is reflected into the page.
      const code = typeof e.details.code === 'string' && e.details.code in REVIEW_ERRORS ? e.details.code : e.code === 'validation' ? 'validation' : 'refused';
      res.redirect(303, `${crBase(req)}?review_error=${code}`);
      return true;
    }
    return false;
  };

  r.post('/projects/:projectId/change-requests/:n/comments', requireCsrf, async (req, res) => {
    const b = CommentForm.parse(req.body ?? {});
    const project = await projectOf(deps, req, res);
    const onLine = b.path && b.line;
    try {
      // The API's own body rules.
      const input = CreateCommentBody.parse({
        body: b.body.replace(/\r\n/g, '\n'),
        ...(onLine ? { path: b.path, line: Number(b.line), side: b.side ?? 'RIGHT', ...(b.commit_sha ? { commit_sha: b.commit_sha } : {}) } : {}),
      });
      await review.comment(project, n(req), me(res), input);
    } catch (e) {
      if (refusalBack(req, res, e)) return;
      throw e;
    }
    respond(req, res, crBase(req), 'commented');
  });

  r.post('/projects/:projectId/change-requests/:n/comments/:commentId/resolve', requireCsrf, async (req, res) => {
    const b = ResolveForm.parse(req.body ?? {});
    const project = await projectOf(deps, req, res);
    await review.resolve(project, n(req), me(res), String(req.params.commentId), b.resolved === 'true');
    respond(req, res, crBase(req), b.resolved === 'true' ? 'resolved' : 'unresolved');
  });

  r.post('/projects/:projectId/change-requests/:n/send-to-agent', requireCsrf, async (req, res) => {
    const project = await projectOf(deps, req, res);
    try {
      await review.sendToAgent(project, n(req), me(res));
    } catch (e) {
      if (refusalBack(req, res, e)) return;
      throw e;
    }
    respond(req, res, crBase(req), 'sent-to-agent');
  });

  r.post('/projects/:projectId/change-requests/:n/reviewed', requireCsrf, async (req, res) => {
    const project = await projectOf(deps, req, res);
    await review.markReviewed(project, n(req), me(res));
    respond(req, res, crBase(req), 'reviewed');
  });
  return r;
}

const REVIEW_ERRORS: Record<string, string> = {
  validation: 'The comment was refused: a line comment needs a file of the diff and a line its hunks show on that side.',
  origin_session_gone: 'The session that opened this change request was removed; open a new session to work on it.',
  no_origin_session: 'No session opened this change request: there is no agent to send it to.',
  head_not_session_branch: "The head of this change request is not its session's branch.",
  nothing_to_send: 'There are no unresolved comments to send.',
  no_model: 'The session has no model to answer with; configure one first.',
  refused: 'That was refused; reload the page and try again.',
};

/** The refusal a plain form came back with (`?review_error=<code>`), shown above the section. */
export const reviewErrorOf = (q: Record<string, unknown>): Html =>
  typeof q.review_error === 'string' && REVIEW_ERRORS[q.review_error] ? html`<p class="notice error" role="alert">${REVIEW_ERRORS[q.review_error]}</p>` : raw('');
