import { Router, type Request, type Response } from 'express';
import type { ProjectRecord } from '../../domain/project.js';
import type { ApiDeps } from '../deps.js';
import { serializeCr } from '../routes/change-requests.js';
import { fireNow } from '../routes/triggers.js';
import { callerOf, csrfOf, projectOf, requireCsrf, userOf } from './context.js';
import { html, timeAgo, type Html } from './html.js';
import { page } from './layout.js';
import { apiRefusal, crumbsOf, projectNav, statusBadge, when } from './shared.js';
import { serializeTrigger } from '../../services/triggers/service.js';

/**
 * A project's triggers (docs/manifest.md "Triggers"): schedule, enabled, last and next
 * fire. Fire spawns a session now and shows its link; Enable / Disable do not flip
 * anything: they open a change request editing `svc.toml` and show its link (the
 * scheduler follows once it merges).
 */
/** The API's trigger object, as `GET .../triggers` sends it. */
type Trigger = ReturnType<typeof serializeTrigger>;

type Result = { status: number; notice?: { kind: 'ok' | 'error'; text: string }; result?: Html };

export function triggersPage(deps: ApiDeps): Router {
  const r = Router();
  const pid = (req: Request) => String(req.params.projectId);
  const enc = encodeURIComponent;

  const render = async (req: Request, res: Response, o: Result = { status: 200 }) => {
    const project = await projectOf(deps, req, res);
    const list = { triggers: (await deps.services.triggers.list(project.project_id)).map(serializeTrigger) };
    res.status(o.status).type('html').set('Cache-Control', 'no-store').send(page({
      title: `Triggers · ${project.name}`, user: userOf(res), csrf: csrfOf(res),
      crumbs: crumbsOf(project, { href: `/projects/${project.project_id}/triggers`, label: 'Triggers' }),
      notice: o.notice ?? null,
      body: body(project, list.triggers, csrfOf(res), o.result),
    }));
  };

  r.get('/projects/:projectId/triggers', (req, res) => render(req, res));

  /** Runs the service call; a refusal (409 already so, 503 no sessions, 404) shows on the list. */
  const act = (verb: 'fire' | 'enable' | 'disable', show: (req: Request, out: Record<string, unknown>) => Html) =>
    r.post(`/projects/:projectId/triggers/:slug/${verb}`, requireCsrf, async (req, res) => {
      const slug = String(req.params.slug);
      let out: Record<string, unknown>;
      try {
        const project = await projectOf(deps, req, res);
        const actor = callerOf(res).user_id;
        out = verb === 'fire'
          ? { session: await fireNow(deps, project, slug, actor) }
          : { change_request: serializeCr(await deps.services.triggers.proposeEnabled(project, slug, verb === 'enable', actor)) };
      } catch (e) {
        const refused = apiRefusal(e);
        if (!refused) throw e;
        if ((req.headers.accept ?? '').includes('application/json')) throw e;
        await render(req, res, refused);
        return;
      }
      if ((req.headers.accept ?? '').includes('application/json')) {
        res.status(verb === 'fire' ? 202 : 201).json(out);
        return;
      }
      // The result is shown in this response (it names what was created): no redirect.
      await render(req, res, { status: 200, result: show(req, out) });
    });

  act('fire', (req, out) => {
    const s = out.session as { session_id: string; status: string };
    const href = `/projects/${enc(pid(req))}/sessions/${enc(s.session_id)}`;
    return html`<p>Fired <strong>${String(req.params.slug)}</strong>: session <a href="${href}" data-session="${s.session_id}"><code>${s.session_id.slice(0, 8)}</code></a> ${statusBadge(s.status)}</p>`;
  });
  for (const verb of ['enable', 'disable'] as const) {
    act(verb, (req, out) => {
      const cr = out.change_request as ReturnType<typeof serializeCr>;
      const href = `/projects/${enc(pid(req))}/change-requests/${cr.number}`;
      return html`<p>Opened change request <a href="${href}" data-cr="${cr.number}">#${cr.number} ${cr.title}</a> to ${verb} <strong>${String(req.params.slug)}</strong>.</p>
<p class="muted">Nothing changes until it merges into the default branch; then the scheduler follows.</p>`;
    });
  }
  return r;
}

function body(project: ProjectRecord, triggers: Trigger[], csrf: string, result: Html | undefined) {
  const base = `/projects/${project.project_id}/triggers`;
  const hidden = html`<input type="hidden" name="_csrf" value="${csrf}">`;
  return html`<h1>Triggers</h1>
${projectNav(project.project_id, 'triggers')}
${result ? html`<div class="notice ok" role="alert" id="result">${result}</div>` : ''}
<p class="muted">Triggers follow <code>[[triggers]]</code> in <code>svc.toml</code> on the default branch; schedules are cron, in the server's time zone.</p>
${triggers.length === 0 ? html`<p class="muted">No triggers.</p>` : html`<table class="list"><thead><tr><th scope="col">Trigger</th><th scope="col">Schedule</th><th scope="col">Enabled</th><th scope="col">Last fired</th><th scope="col">Next fire</th><th scope="col"><span class="sr">Actions</span></th></tr></thead>
<tbody>${triggers.map((t) => html`<tr data-trigger="${t.slug}"><td><strong>${t.slug}</strong><br><span class="muted">${t.prompt.length > 120 ? `${t.prompt.slice(0, 120)}…` : t.prompt}</span>${t.agent ? html` <span class="muted">· ${t.agent}${t.model ? ` (${t.model})` : ''}</span>` : ''}</td>
<td data-label="Schedule"><code>${t.schedule}</code></td>
<td>${t.enabled ? html`<span class="badge s-open" data-enabled="true">enabled</span>` : html`<span class="badge s-closed" data-enabled="false">disabled</span>`}</td>
<td data-label="Last fired">${t.last_fired_at ? timeAgo(t.last_fired_at) : 'never'}</td><td data-label="Next fire">${t.enabled ? when(t.next_fire_at) : '–'}</td>
<td><div class="actions">
<form method="post" action="${base}/${encodeURIComponent(t.slug)}/fire" data-confirm="Fire ${t.slug} now? It starts a session with its prompt.">${hidden}<button type="submit">Fire</button></form>
${t.enabled
    ? html`<form method="post" action="${base}/${encodeURIComponent(t.slug)}/disable">${hidden}<button type="submit" title="Opens a change request">Disable</button></form>`
    : html`<form method="post" action="${base}/${encodeURIComponent(t.slug)}/enable">${hidden}<button type="submit" title="Opens a change request">Enable</button></form>`}
</div></td></tr>`)}</tbody></table>
<p class="hint">Enable and Disable open a change request that edits <code>svc.toml</code>; the trigger changes when it is merged.</p>`}`;
}
