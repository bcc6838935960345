import { Router, type Request, type Response } from 'express';
import { z } from 'zod';
import type { ChangeRequest, MergePreview } from '../../cli/api-client.js';
import { ApiError } from '../../cli/errors.js';
import { apiOf, asDomain, csrfOf, requireCsrf, userOf } from './context.js';
import { fileList, renderDiff } from './diff-view.js';
import { html, shortSha, timeAgo, type Html } from './html.js';
import { page } from './layout.js';
import { crumbsOf, noticeOf, respond, statusBadge } from './shared.js';

/**
 * One change request: metadata (editable), the merge preview, Merge (with the head SHA
 * the page shows, so code pushed after the page loaded is never merged unseen), Close /
 * Reopen, the rendered diff, and the history with "view as of" any event.
 */
interface CrEvent {
  stream_position: number;
  global_position?: number;
  type: string;
  data: Record<string, unknown>;
  actor: string;
  recorded_at: string;
}

const EVENT_LABEL: Record<string, string> = {
  ChangeRequestOpened: 'opened',
  ChangeRequestRefreshed: 'branches moved',
  ChangeRequestEdited: 'edited',
  ChangeRequestMerged: 'merged',
  ChangeRequestClosed: 'closed',
  ChangeRequestReopened: 'reopened',
};

const AsOf = z.object({ as_of: z.iso.datetime({ offset: true }).optional(), notice: z.string().optional(), error: z.string().optional() });
const EditBody = z.object({ _csrf: z.string().optional(), title: z.string().max(1024).optional(), description: z.string().max(65_536).optional() });
const MergeBody = z.object({ _csrf: z.string().optional(), expected_head_sha: z.string().regex(/^[0-9a-f]{40}$/), message: z.string().max(65_536).optional() });

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

function history(events: CrEvent[], base: string, asOf: string | undefined): Html {
  return html`<ol class="timeline">${events.map(
    (e) => html`<li class="${asOf && e.recorded_at === asOf ? 'current' : ''}"><span class="ev">${EVENT_LABEL[e.type] ?? e.type}</span>
${e.type === 'ChangeRequestRefreshed' ? html` <code>${shortSha(e.data.head_commit_sha as string)}</code>` : ''}
<span class="muted">by ${e.actor.slice(0, 8)} · ${timeAgo(e.recorded_at)}</span>
<a href="${base}?${String(new URLSearchParams({ as_of: e.recorded_at }))}">view as of</a></li>`,
  )}</ol>`;
}

async function show(req: Request, res: Response) {
  const api = apiOf(req, res);
  const q = AsOf.parse(req.query);
  const pid = String(req.params.projectId);
  const n = String(req.params.n);
  const base = `/projects/${encodeURIComponent(pid)}/change-requests/${encodeURIComponent(n)}`;
  const enc = encodeURIComponent;
  const crPath = `/projects/${enc(pid)}/change-requests/${enc(n)}`;
  // Everything the page shows, in one round: the diff and the preview do not wait for the CR.
  const settle = <T>(p: Promise<T>) => p.catch((e: unknown) => e as Error);
  const [project, crEnv, events, diff, preview] = await Promise.all([
    api.getProject(pid),
    api.request<{ change_request: ChangeRequest }>('GET', q.as_of ? `${crPath}?as_of=${enc(q.as_of)}` : crPath),
    api.request<{ events: CrEvent[] }>('GET', `${crPath}/events`).then((r) => r.events),
    q.as_of ? Promise.resolve(null) : settle(api.getDiff(pid, n)),
    q.as_of ? Promise.resolve(null) : settle(api.getMergePreview(pid, n)),
  ]);
  const cr = crEnv.change_request;
  const csrf = csrfOf(res);
  const crumbs = crumbsOf(project, { href: base, label: `#${cr.number}` });
  const header = html`<div data-live="cr-head"><h1><span class="title">${cr.title}</span> <span class="muted">#${cr.number}</span></h1>
<p>${statusBadge(cr.status)} <code>${cr.head_ref}</code> → <code>${cr.base_ref}</code> · opened ${timeAgo(cr.created_at)}
· head <code>${shortSha(cr.head_commit_sha)}</code> · base <code>${shortSha(cr.base_commit_sha)}</code>
${cr.origin_session_id ? html` · session <a href="/projects/${project.project_id}/sessions/${cr.origin_session_id}">${cr.origin_session_id.slice(0, 8)}</a>` : ''}</p></div>`;
  const description = html`<div class="description">${cr.description ? html`<pre class="text">${cr.description}</pre>` : html`<p class="muted">No description provided.</p>`}</div>`;

  if (q.as_of) {
    res.type('html').send(page({
      title: `#${cr.number} as of ${q.as_of}`, user: userOf(res), csrf, crumbs,
      body: html`<p class="notice">Viewing this change request as it was at <time>${q.as_of}</time>. <a href="${base}">Back to now</a></p>
${header}${description}<section><h2>History</h2>${history(events, base, q.as_of)}</section>`,
    }));
    return;
  }

  if (!diff) throw new Error('unreachable: the diff is read unless as_of');
  const p = preview instanceof Error || cr.status !== 'open' ? null : preview;
  const previewError = preview instanceof Error && cr.status === 'open' ? (preview instanceof ApiError ? preview.message : 'the repository cannot be read right now') : null;
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
<section aria-labelledby="merge-h" data-live="cr-merge"><h2 id="merge-h">Merge</h2>${previewBlock(cr, p, previewError)}${actions(cr, headSha, p, csrf, base)}</section>
<section aria-labelledby="diff-h"><h2 id="diff-h">Changes ${diffOk ? html`<span class="stat"><span class="plus">+${diff.additions}</span> <span class="minus">−${diff.deletions}</span> in ${diff.files.length} file${diff.files.length === 1 ? '' : 's'}</span>` : ''}</h2>
${diffOk ? html`<p class="muted">${diff.base_sha.slice(0, 7)}…${diff.head_sha.slice(0, 7)}</p>${fileList(diff)}<div class="diffs">${renderDiff(diff, cr.number)}</div>` : html`<p class="warn">The diff cannot be shown right now: ${diff instanceof ApiError ? diff.message : 'the repository cannot be read'}.</p>`}
</section>
<section aria-labelledby="hist-h" data-live="cr-history"><h2 id="hist-h">History</h2>${history(events, base, undefined)}</section>`,
  }));
}

export function crPageRoutes(): Router {
  const r = Router({ mergeParams: true });
  const crBase = (req: Request) => `/projects/${encodeURIComponent(String(req.params.projectId))}/change-requests/${encodeURIComponent(String(req.params.n))}`;

  r.get('/projects/:projectId/change-requests/:n', show);

  r.post('/projects/:projectId/change-requests/:n/edit', requireCsrf, async (req, res) => {
    const b = EditBody.parse(req.body ?? {});
    await apiOf(req, res).request('PATCH', `${crBase(req)}`, { ...(b.title !== undefined ? { title: b.title } : {}), ...(b.description !== undefined ? { description: b.description.replace(/\r\n/g, '\n') } : {}) }).catch((e) => { throw asDomain(e); });
    respond(req, res, crBase(req), 'edited');
  });

  r.post('/projects/:projectId/change-requests/:n/merge', requireCsrf, async (req, res) => {
    const b = MergeBody.parse(req.body ?? {});
    try {
      await apiOf(req, res).request('POST', `${crBase(req)}/merge`, { expected_head_sha: b.expected_head_sha, ...(b.message ? { message: b.message } : {}) });
    } catch (e) {
      // A form post without JS comes back to the page with the reason; fetch gets the API's body.
      if (e instanceof ApiError && (e.code === 'head_modified' || e.code === 'merge_failed') && !(req.headers.accept ?? '').includes('application/json')) {
        return res.redirect(303, `${crBase(req)}?error=${e.code}`);
      }
      throw asDomain(e);
    }
    respond(req, res, crBase(req), 'merged');
  });

  for (const action of ['close', 'reopen'] as const) {
    r.post(`/projects/:projectId/change-requests/:n/${action}`, requireCsrf, async (req, res) => {
      await apiOf(req, res).request('POST', `${crBase(req)}/${action}`, {}).catch((e) => { throw asDomain(e); });
      respond(req, res, crBase(req), action === 'close' ? 'closed' : 'reopened');
    });
  }
  return r;
}
