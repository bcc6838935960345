import { Router, type Request, type Response } from 'express';
import { z } from 'zod';
import type { MergeQueueJson } from '../../contracts/merge-queue.js';
import type { ProjectRecord } from '../../domain/project.js';
import type { ApiDeps } from '../deps.js';
import { callerOf, csrfOf, projectOf, requireCsrf, userOf } from './context.js';
import { html, shortSha, timeAgo } from './html.js';
import { page } from './layout.js';
import { crumbsOf, noticeOf, projectNav, respond, statusBadge } from './shared.js';

/**
 * A base branch's merge queue (docs/merge-queue.md), server-rendered: who waits in order,
 * each one's speculative merge result and its checks, a landing under way, the latest to
 * leave and why; a person takes a CR out with a form post (no inline script or style).
 */
const Query = z.object({ base: z.string().min(1).max(255).optional(), notice: z.string().optional(), error: z.string().optional() });
const RemoveBody = z.object({ _csrf: z.string().optional(), base: z.string().min(1).max(255) });

export function mergeQueuePage(deps: ApiDeps): Router {
  const r = Router();

  r.get('/projects/:projectId/merge-queue', async (req: Request, res: Response) => {
    const project = await projectOf(deps, req, res);
    const qs = Query.parse(req.query);
    const q = await deps.services.mergeQueue.view(project, qs.base);
    res.type('html').set('Cache-Control', 'no-store').send(page({
      title: `Merge queue · ${project.name}`, user: userOf(res), csrf: csrfOf(res),
      crumbs: crumbsOf(project, { href: `/projects/${project.project_id}/merge-queue?base=${encodeURIComponent(q.base_ref)}`, label: `Merge queue of ${q.base_ref}` }),
      notice: noticeOf(qs),
      body: body(project, q, csrfOf(res)),
    }));
  });

  r.post('/projects/:projectId/merge-queue/:n/remove', requireCsrf, async (req: Request, res: Response) => {
    const b = RemoveBody.parse(req.body ?? {});
    const project = await projectOf(deps, req, res);
    await deps.services.mergeQueue.dequeue(project, String(req.params.n), callerOf(res).user_id);
    respond(req, res, `/projects/${encodeURIComponent(project.project_id)}/merge-queue?base=${encodeURIComponent(b.base)}`, 'dequeued');
  });

  return r;
}

function body(project: ProjectRecord, q: MergeQueueJson, csrf: string) {
  const base = `/projects/${project.project_id}`;
  const state = q.state === 'off' ? html`<p class="muted">The merge queue is off: <code>[merge_queue] enabled = true</code> in <code>svc.toml</code> on the default branch turns it on.</p>` : '';
  const entries = q.entries.length === 0
    ? html`<p class="muted">Nothing waits.</p>`
    : html`<table class="list"><thead><tr><th scope="col">#</th><th scope="col">Change request</th><th scope="col">State</th><th scope="col">Speculative result</th><th scope="col">Checks</th><th scope="col">Queued</th><th scope="col"></th></tr></thead>
<tbody>${q.entries.map((e) => html`<tr data-queue-entry="${e.number}" data-state="${e.state}"><td>${e.position}</td>
<td><a href="${base}/change-requests/${e.number}">#${e.number} ${e.title}</a> <code title="${e.head_sha}">${shortSha(e.head_sha)}</code></td>
<td>${statusBadge(e.state)}</td>
<td>${e.speculative_sha ? html`<code title="${e.speculative_sha}">${shortSha(e.speculative_sha)}</code> <span class="muted">on <code>${shortSha(e.speculative_base_sha ?? '')}</code></span>` : '–'}</td>
<td>${e.runs.length ? e.runs.map((r) => html`${statusBadge(r.status)} <a href="${base}/change-requests/${e.number}/checks/${r.run_id}/log" rel="noopener">${r.name}</a> `) : '–'}</td>
<td>${timeAgo(e.queued_at)}</td>
<td><form method="post" action="${base}/merge-queue/${e.number}/remove" data-fetch><input type="hidden" name="_csrf" value="${csrf}"><input type="hidden" name="base" value="${q.base_ref}"><button type="submit">Remove</button></form></td></tr>`)}</tbody></table>`;
  const recent = q.recent.length === 0
    ? ''
    : html`<h2>Recently left</h2><table class="list"><thead><tr><th scope="col">Change request</th><th scope="col">Outcome</th><th scope="col">Why</th><th scope="col">When</th></tr></thead>
<tbody>${q.recent.map((l) => html`<tr data-queue-left="${l.number}" data-outcome="${l.outcome}"><td><a href="${base}/change-requests/${l.number}">#${l.number} ${l.title}</a></td><td>${statusBadge(l.outcome)}</td><td>${l.context ?? ''}</td><td>${timeAgo(l.at)}</td></tr>`)}</tbody></table>`;
  return html`<div data-live-src="${base}/live"></div><h1>Merge queue of <code>${q.base_ref}</code></h1>
${projectNav(project.project_id, 'queue')}
${state}<p class="muted" data-queue-state="${q.state}">State: <strong>${q.state}</strong>${q.base_sha ? html` · built on <code>${shortSha(q.base_sha)}</code>` : ''} · up to ${q.max_batch} checked at once · ${q.landed} landed, ${q.rebuilds} rebuilds</p>
<div data-live="merge-queue">${entries}${recent}</div>`;
}
