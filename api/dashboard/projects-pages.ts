import { Router } from 'express';
import { z } from 'zod';
import type { ProjectRecord } from '../../domain/project.js';
import type { ApiDeps } from '../deps.js';
import { callerOf, csrfOf, projectOf, userOf } from './context.js';
import { html, timeAgo } from './html.js';
import { page } from './layout.js';
import { crumbsOf, projectNav, statusBadge, tabs } from './shared.js';

/** The projects list, and a project's change requests with a status filter (live). */
const ListQuery = z.object({ status: z.enum(['open', 'merged', 'closed', 'all']).default('open') });
/** What one page lists (the API's default page size). */
const PAGE = 30;

export function projectPages(deps: ApiDeps): Router {
  const r = Router();

  r.get('/', (_req, res) => res.redirect(303, '/projects'));

  r.get('/projects', async (_req, res) => {
    const projects = await deps.services.projects.listForUser(callerOf(res).user_id, PAGE, null);
    res.type('html').send(page({
      title: 'Projects', user: userOf(res), csrf: csrfOf(res), crumbs: [{ href: '/projects', label: 'Projects' }],
      body: html`<h1>Projects</h1>
${projects.length === 0 ? html`<p class="muted">No projects yet. Create one with <code>POST /v1/projects</code> (see docs/api.md).</p>` : ''}
<ul class="cards">${projects.map(
        (p: ProjectRecord) => html`<li><a href="/projects/${p.project_id}"><strong>${p.name}</strong></a> <span class="muted">${p.slug} · ${p.default_branch}</span>
<br><span class="muted">${p.repo_url ?? 'managed repository'}</span></li>`,
      )}</ul>`,
    }));
  });

  r.get('/projects/:projectId', async (req, res) => {
    const q = ListQuery.parse(req.query);
    const project = await projectOf(deps, req, res);
    const crs = (await deps.services.changeRequests.list(project, q.status, { perPage: PAGE }, callerOf(res).user_id)).change_requests;
    const base = `/projects/${project.project_id}`;
    res.type('html').send(page({
      title: project.name, user: userOf(res), csrf: csrfOf(res), crumbs: crumbsOf(project),
      body: html`<div data-live-src="${base}/live"></div>
<h1>${project.name}</h1>
<p class="muted">${project.slug} · default branch <code>${project.default_branch}</code></p>
${projectNav(project.project_id, 'crs')}
<h2>Change requests</h2>
${tabs((['open', 'merged', 'closed', 'all'] as const).map((s) => ({ href: `${base}?status=${s}`, label: s[0]!.toUpperCase() + s.slice(1), current: q.status === s })))}
<div data-live="cr-list">
${crs.length === 0 ? html`<p class="muted">No ${q.status === 'all' ? '' : q.status + ' '}change requests.</p>` : html`<table class="list">
<thead><tr><th scope="col">#</th><th scope="col">Title</th><th scope="col">Branch</th><th scope="col">Status</th><th scope="col">Opened</th></tr></thead>
<tbody>${crs.map((cr) => html`<tr data-cr="${cr.number}"><td>#${cr.number}</td><td><a href="${base}/change-requests/${cr.number}">${cr.title}</a></td>
<td><code>${cr.head_ref}</code> → <code>${cr.base_ref}</code></td><td>${statusBadge(cr.status)}</td><td>${timeAgo(cr.created_at)}</td></tr>`)}</tbody></table>`}
</div>`,
    }));
  });

  return r;
}
