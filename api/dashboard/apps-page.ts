import { Router } from 'express';
import type { ProjectRecord } from '../../domain/project.js';
import { serializeApp } from '../../services/apps/deploy.js';
import { appOrigin } from '../../services/apps/origin.js';
import type { ApiDeps } from '../deps.js';
import { csrfOf, projectOf, userOf } from './context.js';
import { html, shortSha, timeAgo } from './html.js';
import { page } from './layout.js';
import { crumbsOf, httpUrl, projectNav, statusBadge } from './shared.js';

/**
 * A project's apps (docs/manifest.md "Apps"), read-only: they follow `[[apps]]` on the
 * default branch. Status, commit, URL, last error and the recent deploys of each.
 */
type App = ReturnType<typeof serializeApp>;
interface Deploy {
  deploy_id: string;
  commit_sha: string | null;
  status: string;
  url: string | null;
  error: string | null;
  started_at: string | null;
  finished_at: string | null;
}

/** At most this many apps get their deploy history read (one query each). */
const DETAIL_LIMIT = 20;

export function appsPage(deps: ApiDeps): Router {
  const r = Router();

  r.get('/projects/:projectId/apps', async (req, res) => {
    const project = await projectOf(deps, req, res);
    const list = { apps: (await deps.services.apps.list(project.project_id)).map((a) => serializeApp(a, `${appOrigin(deps.settings, a.name, a.project_id, req.socket.localPort ?? 0)}/`)) };
    const deploys = await Promise.all(list.apps.map((a, i) => i >= DETAIL_LIMIT
      ? Promise.resolve(null)
      : deps.services.apps.deploys(project.project_id, a.name, 10).then((d) => d as unknown as Deploy[], () => null)));
    res.type('html').set('Cache-Control', 'no-store').send(page({
      title: `Apps · ${project.name}`, user: userOf(res), csrf: csrfOf(res),
      crumbs: crumbsOf(project, { href: `/projects/${project.project_id}/apps`, label: 'Apps' }),
      body: body(project, list.apps, deploys),
    }));
  });

  return r;
}

const link = (u: string | null) => {
  const href = httpUrl(u);
  return href ? html`<a href="${href}" rel="noopener noreferrer" target="_blank">${href}</a>` : u ? html`<code>${u}</code>` : html`–`;
};

function body(project: ProjectRecord, apps: App[], deploys: Array<Deploy[] | null>) {
  return html`<div data-live-src="/projects/${project.project_id}/live"></div><h1>Apps</h1>
${projectNav(project.project_id, 'apps')}
<p class="muted">Apps follow <code>[[apps]]</code> in <code>svc.toml</code> on the default branch: a merge that changes an entry deploys it.</p>
<div data-live="apps">${apps.length === 0 ? html`<p class="muted">No apps.</p>` : apps.map((a, i) => html`<section class="app" data-app="${a.name}">
<h2>${a.name} ${statusBadge(a.status)}</h2>
<dl class="facts"><dt>Commit</dt><dd>${a.commit_sha ? html`<code title="${a.commit_sha}">${shortSha(a.commit_sha)}</code>` : '–'}</dd>
<dt>URL</dt><dd>${link(a.url)} <span class="muted">${a.public ? 'public: anyone may open it' : "the project's members only"}</span></dd><dt>Deployed</dt><dd>${a.deployed_at ? timeAgo(a.deployed_at) : 'never'}</dd></dl>
${a.last_error ? html`<div class="preview bad" role="alert"><strong>Last error</strong> <pre class="text">${a.last_error}</pre></div>` : ''}
${deploys[i] === null ? html`<p class="muted">Deploy history unavailable.</p>` : deploys[i]!.length === 0 ? html`<p class="muted">No deploys yet.</p>` : html`<details${i === 0 ? html` open` : ''}><summary>Recent deploys (${deploys[i]!.length})</summary>
<table class="list"><thead><tr><th scope="col">Started</th><th scope="col">Commit</th><th scope="col">Status</th><th scope="col">Finished</th><th scope="col">Error</th></tr></thead>
<tbody>${deploys[i]!.map((d) => html`<tr data-deploy="${d.deploy_id}"><td data-label="Started">${timeAgo(d.started_at)}</td><td>${d.commit_sha ? html`<code title="${d.commit_sha}">${shortSha(d.commit_sha)}</code>` : '–'}</td><td>${statusBadge(d.status)}</td>
<td data-label="Finished">${d.finished_at ? timeAgo(d.finished_at) : '–'}</td><td>${d.error ? html`<span class="warn">${d.error}</span>` : ''}</td></tr>`)}</tbody></table></details>`}
</section>`)}</div>`;
}
