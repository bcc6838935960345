import { Router, type Request, type Response } from 'express';
import { z } from 'zod';
import type { ChangeRequest } from '../../domain/change-request/index.js';
import type { MergePreview } from '../../domain/change-request/views.js';
import { isDomainError } from '../../domain/errors.js';
import type { CrHistoryEntry } from '../../services/change-requests/service.js';
import type { ApiDeps } from '../deps.js';
import { costLine } from './cost-facts.js';
import type { Family, FamilyMember } from '../../services/change-requests/stack.js';
import { mergeAs } from '../routes/change-requests.js';
import { EditChangeRequestBody, MergeChangeRequestBody } from '../../contracts/change-requests.js';
import { callerOf, csrfOf, projectOf, requireCsrf, userOf } from './context.js';
import { fileList } from './diff-view.js';
import { diffWithComments, loadReview, reviewErrorOf, reviewSection } from './cr-review.js';
import { html, shortSha, timeAgo, type Html } from './html.js';
import { page } from './layout.js';
import { crumbsOf, noticeOf, respond, statusBadge } from './shared.js';
import { checksOf, checksSection } from './checks-section.js';

/**
 * One change request: metadata (editable), the merge preview, Merge (with the head SHA
 * the page shows, so code pushed after the page loaded is never merged unseen), Close /
 * Reopen, the rendered diff, and the history with "view as of" any event.
 */
type CrEvent = CrHistoryEntry;

const EVENT_LABEL: Record<string, string> = {
  ChangeRequestOpened: 'opened',
  ChangeRequestRefreshed: 'branches moved',
  ChangeRequestEdited: 'edited',
  ChangeRequestMerged: 'merged',
  ChangeRequestClosed: 'closed',
  ChangeRequestReopened: 'reopened',
  ChangeRequestStacked: 'stacked on its parent',
  ChangeRequestRetargeted: 'retargeted',
  ChangeRequestCommented: 'commented',
  ChangeRequestCommentResolved: 'resolved a comment',
  ChangeRequestCommentUnresolved: 'unresolved a comment',
  ChangeRequestReviewed: 'marked reviewed',
  ChangeRequestSentToAgent: 'sent to the agent',
  CheckQueued: 'check queued',
  CheckStarted: 'check started',
  CheckPassed: 'check passed',
  CheckFailed: 'check failed',
  CheckErrored: 'check errored',
  CheckCancelled: 'check cancelled',
  ChangeRequestAutoMergeRequested: 'merge when green asked',
  ChangeRequestAutoMergeCancelled: 'merge when green cancelled',
  ChangeRequestQueued: 'entered the merge queue',
  ChangeRequestDequeued: 'left the merge queue',
};

const AsOf = z.object({ as_of: z.iso.datetime({ offset: true }).optional(), notice: z.string().optional(), error: z.string().optional() });
const EditBody = z.object({ _csrf: z.string().optional(), title: z.string().max(1024).optional(), description: z.string().max(65_536).optional() });
const MergeBody = z.object({ _csrf: z.string().optional(), expected_head_sha: z.string().regex(/^[0-9a-f]{40}$/), message: z.string().max(65_536).optional(), stack: z.literal('1').optional() });

export function previewBlock(cr: ChangeRequest, p: MergePreview | null, previewError: string | null): Html {
  if (cr.status !== 'open') return html``;
  if (!p) return html`<div class="preview warn"><strong>Merge preview unavailable.</strong> ${previewError ?? ''}</div>`;
  if (p.is_up_to_date) return html`<div class="preview">Nothing to merge: <code>${cr.head_ref}</code> is already in <code>${cr.base_ref}</code>.</div>`;
  if (!p.can_merge) {
    return html`<div class="preview bad"><strong>Conflicts</strong> in ${p.conflicts.length} file${p.conflicts.length === 1 ? '' : 's'}:
<ul class="conflicts">${p.conflicts.map((c) => html`<li><code>${c}</code></li>`)}</ul>
<p>To resolve: on the session branch, merge the base into it (<code>git pull origin ${cr.base_ref}</code>), resolve the conflicts locally,
commit and push, then run <code>svc cr show ${cr.number}</code> to confirm a clean preview. The CR is then merged here; the agent never merges to force a resolution.</p></div>`;
  }
  return p.can_fast_forward
    ? html`<div class="preview ok"><strong>Clean:</strong> can be merged as a fast-forward.</div>`
    : html`<div class="preview ok"><strong>Clean:</strong> can be merged with a merge commit.</div>`;
}

function actions(cr: ChangeRequest, headSha: string | null, p: MergePreview | null, csrf: string, base: string): Html {
  const hidden = html`<input type="hidden" name="_csrf" value="${csrf}">`;
  if (cr.status === 'merged') return html`<p class="muted">Merged ${timeAgo(cr.merged_at)} as <code>${shortSha(cr.merge_commit_sha)}</code>.</p>`;
  if (cr.status === 'closed') {
    return html`<form method="post" action="${base}/reopen" data-fetch>${hidden}<button type="submit">Reopen</button></form>`;
  }
  const canMerge = !!p && p.can_merge && !p.is_up_to_date && !!headSha;
  return html`<div class="actions">
<form method="post" action="${base}/merge" data-fetch class="merge">${hidden}<input type="hidden" name="expected_head_sha" value="${headSha ?? ''}">
<button type="submit" class="primary" ${canMerge ? '' : 'disabled'}>Merge</button></form>
<form method="post" action="${base}/close" data-fetch>${hidden}<button type="submit">Close</button></form>
</div>`;
}

/** The stack around the CR: its parent and the CRs stacked on it (nothing when it has neither). */
function stackSection(f: Family | null, projectId: string, cr: ChangeRequest, merge: { csrf: string; headSha: string | null; base: string }): Html {
  if (!f || (!f.parent && f.children.length === 0)) return html``;
  const n = cr.number;
  // The stack below this one merges bottom-up, this one last, bound to the head shown here.
  const mergeStack = f.parent && f.parent.status === 'open' && cr.status === 'open' && merge.headSha
    ? html`<form method="post" action="${merge.base}/merge" data-fetch class="merge-stack"><input type="hidden" name="_csrf" value="${merge.csrf}"><input type="hidden" name="expected_head_sha" value="${merge.headSha}"><input type="hidden" name="stack" value="1">
<button type="submit">Merge the stack up to #${n}</button></form>`
    : '';
  const link = (m: FamilyMember) => html`<a href="/projects/${projectId}/change-requests/${m.number}">#${m.number}</a> ${m.title} ${statusBadge(m.status)} <code>${m.head_ref}</code>`;
  return html`<section aria-labelledby="stack-h" data-stack><h2 id="stack-h">Stack</h2>
${f.parent ? html`<p data-stack-parent>Stacked on ${link(f.parent)}: merging this one merges it into <code>${f.parent.head_ref}</code>.</p>` : ''}
${f.note ? html`<p class="warn" data-stack-note>${f.note}</p>` : ''}
${f.children.length ? html`<p>Stacked on this one:</p><ul data-stack-children>${f.children.map((c) => html`<li>${link(c)}</li>`)}</ul>` : ''}
${mergeStack}<p class="muted">The whole chain: <code>svc cr stack ${n}</code>; merge it bottom-up with <code>svc cr merge ${n} --stack</code>.</p></section>`;
}

/** Who acted, by name: a person, or their agent in a session (linked), for them. */
function actorOf(e: CrEvent, projectId: string): Html {
  const person = e.actor_name ?? (e.actor === 'system' ? 'svc' : `user ${e.actor.slice(0, 8)}`);
  if (!e.session_id) return html`${person}`;
  return html`the agent in session <a href="/projects/${projectId}/sessions/${e.session_id}">${e.session_id.slice(0, 8)}</a>, for ${person}`;
}

function history(events: CrEvent[], base: string, asOf: string | undefined, project: string): Html {
  return html`<ol class="timeline">${events.map(
    (e) => html`<li class="${asOf && e.recorded_at === asOf ? 'current' : ''}"><span class="ev">${EVENT_LABEL[e.type] ?? e.type}</span>
${e.type === 'ChangeRequestRefreshed' ? html` <code>${shortSha((e.data as { head_commit_sha?: string }).head_commit_sha)}</code>` : ''}
<span class="muted">by ${actorOf(e, project)} · ${timeAgo(e.recorded_at)}</span>
<a href="${base}?${String(new URLSearchParams({ as_of: e.recorded_at }))}">view as of</a></li>`,
  )}</ol>`;
}

/**
 * The page's reads, as the signed-in user: the project (the access rule), the CR once
 * (refreshed when open, or folded as of a time), then its history, diff and merge
 * preview from that one read, side by side.
 */
async function show(deps: ApiDeps, req: Request, res: Response) {
  const crs = deps.services.changeRequests;
  const q = AsOf.parse(req.query);
  const n = String(req.params.n);
  const project = await projectOf(deps, req, res);
  const base = `/projects/${encodeURIComponent(String(req.params.projectId))}/change-requests/${encodeURIComponent(n)}`;
  const settle = <T>(p: Promise<T>) => p.catch((e: unknown) => e as Error);
  // Now: read with its stack's family in the one read of the CR (then refreshed); as of a time: folded.
  const now = q.as_of ? null : await crs.findWithFamily(project.project_id, n);
  const family = now?.family ?? null;
  const cr = await crs.get(project, n, callerOf(res).user_id, q.as_of ? { asOf: new Date(q.as_of) } : { found: now!.cr });
  const [events, diff, preview, review] = await Promise.all([
    crs.historyOf(cr),
    q.as_of ? Promise.resolve(null) : settle(crs.diffOf(project, cr)),
    q.as_of ? Promise.resolve(null) : settle(crs.previewOf(project, cr)),
    loadReview(deps, project, cr, callerOf(res).user_id, q.as_of ? new Date(q.as_of) : undefined),
  ]);
  // What it cost: its checks' time from the history just read, its session's calls and sandbox time in one statement (none for a person's branch).
  const [checks, cost] = q.as_of
    ? [null, null]
    : await Promise.all([checksOf(deps, project, cr, events), crs.costFrom(project, cr, events).catch(() => null)]);
  const csrf = csrfOf(res);
  const crumbs = crumbsOf(project, { href: base, label: `#${cr.number}` });
  const header = html`<div data-live="cr-head"><h1><span class="title">${cr.title}</span> <span class="muted">#${cr.number}</span></h1>
<p>${statusBadge(cr.status)} <code>${cr.head_ref}</code> → <code>${cr.base_ref}</code> · opened ${timeAgo(cr.created_at)}
· head <code>${shortSha(cr.head_commit_sha)}</code> · base <code>${shortSha(cr.base_commit_sha)}</code>
${cr.origin_session_id ? html` · session <a href="/projects/${project.project_id}/sessions/${cr.origin_session_id}">${cr.origin_session_id.slice(0, 8)}</a>` : ''}</p>
${cost ? costLine(cost) : ''}</div>`;
  const description = html`<div class="description">${cr.description ? html`<pre class="text">${cr.description}</pre>` : html`<p class="muted">No description provided.</p>`}</div>`;

  if (q.as_of) {
    res.type('html').send(page({
      title: `#${cr.number} as of ${q.as_of}`, user: userOf(res), csrf, crumbs,
      body: html`<p class="notice">Viewing this change request as it was at <time>${q.as_of}</time>. <a href="${base}">Back to now</a></p>
${header}${description}${reviewSection(cr, review, null, csrf, base, true)}<section><h2>History</h2>${history(events, base, q.as_of, project.project_id)}</section>`,
    }));
    return;
  }

  if (!diff) throw new Error('unreachable: the diff is read unless as_of');
  const p = preview instanceof Error || cr.status !== 'open' ? null : preview;
  const previewError = preview instanceof Error && cr.status === 'open' ? (isDomainError(preview) ? preview.message : 'the repository cannot be read right now') : null;
  const diffOk = !(diff instanceof Error);
  const headSha = diffOk ? diff.head_sha : cr.head_commit_sha;
  res.type('html').send(page({
    title: `${cr.title} #${cr.number}`, user: userOf(res), csrf, crumbs,
    notice: noticeOf(q),
    body: html`<div data-live-src="/projects/${project.project_id}/live" data-live-stream="${cr.cr_id}"></div>
${header}
<details class="edit"><summary>Edit title and description</summary>
<form method="post" action="${base}/edit" class="stack" data-fetch><input type="hidden" name="_csrf" value="${csrf}">
<label>Title <input name="title" required maxlength="1024" value="${cr.title}"></label>
<label>Description <textarea name="description" rows="6">${cr.description}</textarea></label>
<button type="submit">Save</button></form></details>
${description}
${stackSection(family, project.project_id, cr, { csrf, headSha, base })}
${reviewErrorOf(req.query)}${reviewSection(cr, review, diffOk ? diff : null, csrf, base)}
<section aria-labelledby="merge-h" data-live="cr-merge"><h2 id="merge-h">Merge</h2>${previewBlock(cr, p, previewError)}${actions(cr, headSha, p, csrf, base)}</section>
${checksSection(checks, cr, headSha, csrf, base)}
<section aria-labelledby="diff-h"><h2 id="diff-h">Changes ${diffOk ? html`<span class="stat"><span class="plus">+${diff.additions}</span> <span class="minus">−${diff.deletions}</span> in ${diff.files.length} file${diff.files.length === 1 ? '' : 's'}</span>` : ''}</h2>
${diffOk ? html`<p class="muted">${diff.base_sha.slice(0, 7)}…${diff.head_sha.slice(0, 7)}</p>${fileList(diff)}<div class="diffs" data-live="cr-diff">${diffWithComments(diff, cr, review, csrf, base)}</div>` : html`<p class="warn">The diff cannot be shown right now: ${isDomainError(diff) ? diff.message : 'the repository cannot be read'}.</p>`}
</section>
<section aria-labelledby="hist-h" data-live="cr-history"><h2 id="hist-h">History</h2>${history(events, base, undefined, project.project_id)}</section>`,
  }));
}

export function crPageRoutes(deps: ApiDeps): Router {
  const r = Router({ mergeParams: true });
  const crs = deps.services.changeRequests;
  const crBase = (req: Request) => `/projects/${encodeURIComponent(String(req.params.projectId))}/change-requests/${encodeURIComponent(String(req.params.n))}`;
  const n = (req: Request) => String(req.params.n);

  r.get('/projects/:projectId/change-requests/:n', (req, res) => show(deps, req, res));

  r.post('/projects/:projectId/change-requests/:n/edit', requireCsrf, async (req, res) => {
    const b = EditBody.parse(req.body ?? {});
    const project = await projectOf(deps, req, res);
    // The API's own body rules (text without control characters, one of the two given).
    const edit = EditChangeRequestBody.parse({
      ...(b.title !== undefined ? { title: b.title } : {}),
      ...(b.description !== undefined ? { description: b.description.replace(/\r\n/g, '\n') } : {}),
    });
    await crs.edit(project, n(req), callerOf(res).user_id, edit);
    respond(req, res, crBase(req), 'edited');
  });

  r.post('/projects/:projectId/change-requests/:n/merge', requireCsrf, async (req, res) => {
    const b = MergeBody.parse(req.body ?? {});
    const project = await projectOf(deps, req, res);
    try {
      const body = MergeChangeRequestBody.parse({ expected_head_sha: b.expected_head_sha, ...(b.message ? { message: b.message } : {}), ...(b.stack ? { stack: true } : {}) });
      await mergeAs(deps, project, n(req), callerOf(res).user_id, body);
    } catch (e) {
      // A form post without JS comes back to the page with the reason; fetch gets the API's body.
      if (isDomainError(e) && (e.code === 'head_modified' || e.code === 'merge_failed' || e.code === 'merge_queue_enabled') && !(req.headers.accept ?? '').includes('application/json')) {
        return res.redirect(303, `${crBase(req)}?error=${e.code}`);
      }
      throw e;
    }
    respond(req, res, crBase(req), 'merged');
  });

  for (const action of ['close', 'reopen'] as const) {
    r.post(`/projects/:projectId/change-requests/:n/${action}`, requireCsrf, async (req, res) => {
      const project = await projectOf(deps, req, res);
      const act = action === 'close' ? crs.close : crs.reopen;
      await act(project, n(req), callerOf(res).user_id);
      respond(req, res, crBase(req), action === 'close' ? 'closed' : 'reopened');
    });
  }
  return r;
}
