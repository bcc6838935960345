import { Router, type Request, type Response } from 'express';
import { z } from 'zod';
import type { ProjectRecord } from '../../domain/project.js';
import type { SecretsListing } from '../../services/secrets/service.js';
import type { ApiDeps } from '../deps.js';
import { callerOf, csrfOf, projectOf, requireCsrf, userOf } from './context.js';
import { html, timeAgo } from './html.js';
import { page } from './layout.js';
import { apiRefusal, crumbsOf, noticeOf, projectNav, respond } from './shared.js';

/**
 * A project's secrets (docs/manifest.md "Secrets"): the names set and when, the manifest's
 * `[env]` spec with required names not set marked, a form to set one and Unset buttons.
 * Values are write-only: the form's value field is a password field that always renders
 * empty, a set redirects (so no response carries the value back), and no page, notice
 * or URL ever holds one.
 */
type Listing = SecretsListing;

const NAME = /^[A-Z_][A-Z0-9_]*$/;
const PageQuery = z.object({ name: z.string().optional(), notice: z.string().optional(), error: z.string().optional() });
const SetBody = z.object({ _csrf: z.string().optional(), name: z.string().trim().min(1).max(200), value: z.string().max(65_536) });

export function secretsPage(deps: ApiDeps): Router {
  const r = Router();
  const pid = (req: Request) => String(req.params.projectId);
  const enc = encodeURIComponent;

  const render = async (
    req: Request,
    res: Response,
    o: { status?: number; notice?: { kind: 'ok' | 'error'; text: string } | null; name?: string } = {},
  ) => {
    const project = await projectOf(deps, req, res);
    const listing = await deps.services.manifest.secrets(project);
    const q = PageQuery.parse(req.query);
    // A name to prefill (the "Set" link of a missing one): a secret name or nothing.
    const prefill = o.name ?? (q.name && NAME.test(q.name) ? q.name : '');
    res.status(o.status ?? 200).type('html').set('Cache-Control', 'no-store').send(page({
      title: `Secrets · ${project.name}`, user: userOf(res), csrf: csrfOf(res),
      crumbs: crumbsOf(project, { href: `/projects/${project.project_id}/secrets`, label: 'Secrets' }),
      notice: o.notice !== undefined ? o.notice : noticeOf(q),
      body: body(project, listing, csrfOf(res), prefill),
    }));
  };

  r.get('/projects/:projectId/secrets', (req, res) => render(req, res));

  r.post('/projects/:projectId/secrets', requireCsrf, async (req, res) => {
    const parsed = SetBody.safeParse(req.body ?? {});
    if (!parsed.success) {
      await render(req, res, { status: 400, notice: { kind: 'error', text: 'Give a name, and a value of at most 64 KiB.' } });
      return;
    }
    const { name, value } = parsed.data;
    try {
      const project = await projectOf(deps, req, res);
      await deps.services.manifest.putSecret(project.project_id, callerOf(res).user_id, name, value);
    } catch (e) {
      const refused = apiRefusal(e);
      if (!refused) throw e;
      // The name comes back (it is not secret); the value never does.
      await render(req, res, { ...refused, name: NAME.test(name) ? name : '' });
      return;
    }
    respond(req, res, `/projects/${enc(pid(req))}/secrets`, 'secret_set', { name });
  });

  r.post('/projects/:projectId/secrets/:name/unset', requireCsrf, async (req, res) => {
    const name = String(req.params.name);
    try {
      const project = await projectOf(deps, req, res);
      await deps.services.manifest.deleteSecret(project.project_id, callerOf(res).user_id, name);
    } catch (e) {
      const refused = apiRefusal(e);
      if (!refused) throw e;
      await render(req, res, refused);
      return;
    }
    respond(req, res, `/projects/${enc(pid(req))}/secrets`, 'secret_unset', { name });
  });

  return r;
}

function body(project: ProjectRecord, l: Listing, csrf: string, prefill: string) {
  const base = `/projects/${project.project_id}/secrets`;
  const hidden = html`<input type="hidden" name="_csrf" value="${csrf}">`;
  const missing = new Set(l.env.missing);
  const required = new Set(l.env.required.map((e) => e.name));
  const declared = new Map([...l.env.optional.map((e) => [e.name, 'optional'] as const), ...l.env.required.map((e) => [e.name, 'required'] as const)]);
  const setAt = new Map(l.secrets.map((s) => [s.name, s.updated_at]));
  const spec = [...l.env.required.map((e) => ({ ...e, kind: 'required' })), ...l.env.optional.map((e) => ({ ...e, kind: 'optional' }))];
  return html`<h1>Secrets</h1>
${projectNav(project.project_id, 'secrets')}
<p class="muted">Values are write-only: they go into the project's sandboxes and apps, never back to this page. Revision ${l.revision}.</p>
${missing.size ? html`<p class="notice error" data-missing="${l.env.missing.join(',')}">Required by <code>svc.toml</code> and not set: ${l.env.missing.map((n, i) => html`${i ? ', ' : ''}<code>${n}</code>`)}.</p>` : ''}
<section id="set"><h2>Set a secret</h2>
<form method="post" action="${base}" class="stack row" autocomplete="off">${hidden}
<label>Name <input name="name" required maxlength="200" pattern="[A-Z_][A-Z0-9_]*" value="${prefill}" list="env-names" autocapitalize="characters" spellcheck="false" placeholder="API_KEY"></label>
<label>Value <input type="password" name="value" maxlength="65536" autocomplete="new-password" spellcheck="false"></label>
<button type="submit">Set</button></form>
<datalist id="env-names">${spec.map((e) => html`<option value="${e.name}">`)}</datalist>
<p class="hint">Setting a name that is already set replaces its value. Names are upper case (<code>A-Z 0-9 _</code>); <code>SVC_</code> names are reserved.</p></section>
<section><h2>Set secrets</h2>
${l.secrets.length === 0 ? html`<p class="muted">No secrets set.</p>` : html`<table class="list"><thead><tr><th scope="col">Name</th><th scope="col">In svc.toml</th><th scope="col">Updated</th><th scope="col"><span class="sr">Actions</span></th></tr></thead>
<tbody>${l.secrets.map((s) => html`<tr data-secret="${s.name}"><td><code>${s.name}</code></td><td>${declared.get(s.name) ?? html`<span class="muted">not declared</span>`}</td><td data-label="Updated">${timeAgo(s.updated_at)}</td>
<td><form method="post" action="${base}/${encodeURIComponent(s.name)}/unset" data-confirm="Unset ${s.name}? Sandboxes lose it on their next start.">${hidden}<button type="submit" class="danger">Unset</button></form></td></tr>`)}</tbody></table>`}
</section>
<section><h2>Expected by <code>svc.toml</code> <span class="muted">[env]</span></h2>
${spec.length === 0 ? html`<p class="muted">The manifest declares no <code>[env]</code> names.</p>` : html`<table class="list"><thead><tr><th scope="col">Name</th><th scope="col">Kind</th><th scope="col">Description</th><th scope="col">Status</th></tr></thead>
<tbody>${spec.map((e) => html`<tr data-env="${e.name}"><td><code>${e.name}</code></td><td>${e.kind}</td><td>${e.description ?? ''}</td>
<td>${setAt.has(e.name)
    ? html`<span class="badge s-open">set</span>`
    : missing.has(e.name) || required.has(e.name)
      ? html`<span class="badge s-missing" data-status="missing">missing</span> <a href="${base}?name=${encodeURIComponent(e.name)}#set">Set</a>`
      : html`<span class="muted">not set</span> <a href="${base}?name=${encodeURIComponent(e.name)}#set">Set</a>`}</td></tr>`)}</tbody></table>`}
</section>`;
}
