import { UNISOLATED_PROVIDERS } from '../../domain/sandbox.js';
import { Router, type Request, type Response } from 'express';
import { z } from 'zod';
import { ApiError } from '../../cli/errors.js';
import { sessionsApi, type Session } from '../../cli/sessions-api.js';
import { DomainError } from '../../domain/errors.js';
import { apiOf, asDomain, csrfOf, requireCsrf, userOf } from './context.js';
import { html, timeAgo, type Html } from './html.js';
import { page } from './layout.js';
import { crumbsOf, noticeOf, respond, statusBadge } from './shared.js';

/**
 * Sessions (contracts.md "Sessions"): the list, and one session with its sandbox, errors,
 * open CRs, Stop / Restart / Remove, Refresh (the daemon's /svc/refresh, through the
 * server), a chat pane (prompts go through the server; with JS the reply streams from
 * the agent proxy) and a preview iframe for a port.
 */
const PageQuery = z.object({ port: z.string().regex(/^\d{1,5}$/).optional(), notice: z.string().optional(), error: z.string().optional() });
const Prompt = z.object({ _csrf: z.string().optional(), text: z.string().min(1).max(65_536) });

const sessionRow = (pid: string, s: Session) => html`<tr><td><a href="/projects/${pid}/sessions/${s.session_id}"><code>${s.session_id.slice(0, 8)}</code></a></td>
<td>${statusBadge(s.status)}</td><td>${s.agent}${s.model ? html` <span class="muted">${s.model}</span>` : ''}</td><td><code>${s.base_ref}</code></td><td>${timeAgo(s.created_at)}</td></tr>`;

function unavailable(e: unknown): Html | null {
  if (e instanceof ApiError && e.status === 404 && e.reason === 'Not found' && /No route/.test(e.message)) {
    return html`<p class="warn">This server has no sessions API yet.</p>`;
  }
  return null;
}

export function sessionPages(): Router {
  const r = Router();
  const sid = (req: Request) => String(req.params.sessionId);
  const pid = (req: Request) => String(req.params.projectId);
  const back = (req: Request) => `/projects/${encodeURIComponent(pid(req))}/sessions/${encodeURIComponent(sid(req))}`;

  r.get('/projects/:projectId/sessions', async (req, res) => {
    const api = apiOf(req, res);
    const project = await api.getProject(pid(req));
    const list = await sessionsApi(api).list(project.project_id).catch((e: unknown) => e as Error);
    const base = `/projects/${project.project_id}/sessions`;
    res.type('html').send(page({
      title: `Sessions · ${project.name}`, user: userOf(res), csrf: csrfOf(res), crumbs: crumbsOf(project, { href: base, label: 'Sessions' }),
      body: html`<div data-live-src="/projects/${project.project_id}/live"></div><h1>Sessions</h1>
<form method="post" action="${base}" class="stack row"><input type="hidden" name="_csrf" value="${csrfOf(res)}">
<label>First prompt (optional) <input name="text" maxlength="65536"></label><button type="submit">New session</button></form>
<div data-live="sessions">${list instanceof Error
        ? (unavailable(list) ?? html`<p class="warn">Sessions cannot be listed: ${list.message}</p>`)
        : list.length === 0 ? html`<p class="muted">No sessions.</p>`
        : html`<table class="list"><thead><tr><th scope="col">Session</th><th scope="col">Status</th><th scope="col">Agent</th><th scope="col">Base</th><th scope="col">Created</th></tr></thead>
<tbody>${list.map((s) => sessionRow(project.project_id, s))}</tbody></table>`}</div>`,
    }));
  });

  r.post('/projects/:projectId/sessions', requireCsrf, async (req, res) => {
    const text = typeof req.body?.text === 'string' && req.body.text.trim() ? String(req.body.text).slice(0, 65_536) : undefined;
    const s = await sessionsApi(apiOf(req, res)).create(pid(req), text ? { prompt: text } : {}).catch((e) => { throw asDomain(e); });
    respond(req, res, `/projects/${encodeURIComponent(pid(req))}/sessions/${s.session_id}`, 'created', { session: s });
  });

  r.get('/projects/:projectId/sessions/:sessionId', async (req, res) => {
    const api = apiOf(req, res);
    const q = PageQuery.parse(req.query);
    const [project, s, crs] = await Promise.all([
      api.getProject(pid(req)),
      sessionsApi(api).get(pid(req), sid(req)).catch((e) => { throw asDomain(e); }),
      api.listChangeRequests(pid(req), 'open'),
    ]);
    const base = `/projects/${project.project_id}/sessions/${s.session_id}`;
    const apiBase = `/v1/projects/${project.project_id}/sessions/${s.session_id}`;
    const port = q.port ? Number(q.port) : 3000;
    const csrf = csrfOf(res);
    const hidden = html`<input type="hidden" name="_csrf" value="${csrf}">`;
    const mine = crs.filter((c) => c.origin_session_id === s.session_id || c.head_ref === s.branch);
    res.type('html').send(page({
      title: `Session ${s.session_id.slice(0, 8)}`, user: userOf(res), csrf,
      crumbs: crumbsOf(project, { href: `/projects/${project.project_id}/sessions`, label: 'Sessions' }, { href: base, label: s.session_id.slice(0, 8) }),
      notice: noticeOf(q),
      body: html`<div data-live-src="/projects/${project.project_id}/live"></div>
<div data-live="session-head"><h1>Session <code>${s.session_id}</code></h1>
<dl class="facts"><dt>Status</dt><dd>${statusBadge(s.status)}</dd><dt>Branch</dt><dd><code>${s.branch}</code></dd><dt>Base</dt><dd><code>${s.base_ref}</code></dd>
<dt>Agent</dt><dd>${s.agent}${s.model ? ` (${s.model})` : ''}</dd><dt>Sandbox</dt><dd>${s.sandbox ? html`${s.sandbox.state} · ${s.sandbox.provider}${UNISOLATED_PROVIDERS.includes(s.sandbox.provider as never) ? ' (unisolated)' : ''}${s.sandbox.url ? html` · <code>${s.sandbox.url}</code>` : ''}` : '–'}</dd>
<dt>Last activity</dt><dd>${timeAgo(s.last_activity_at)}</dd></dl>
${s.error ? html`<div class="preview bad" role="alert"><strong>${s.error.code}</strong>: ${s.error.message} <span class="muted">${timeAgo(s.error.at)}</span></div>` : ''}</div>
<div class="actions">
<form method="post" action="${base}/stop" data-fetch>${hidden}<button type="submit">Stop</button></form>
<form method="post" action="${base}/restart" data-fetch>${hidden}<button type="submit">Restart</button></form>
<form method="post" action="${base}/refresh" data-fetch>${hidden}<button type="submit">Refresh</button></form>
<form method="post" action="${base}/remove" data-confirm="Stop and delete this session? Its branch stays.">${hidden}<button type="submit" class="danger">Remove</button></form>
</div>
<section><h2>Open change requests</h2>${mine.length ? html`<ul>${mine.map((c) => html`<li><a href="/projects/${project.project_id}/change-requests/${c.number}">#${c.number} ${c.title}</a></li>`)}</ul>` : html`<p class="muted">None.</p>`}</section>
<section class="chat" data-chat="${apiBase}/agent"><h2>Chat</h2>
<div class="log" id="chat-log" aria-live="polite"></div>
<form method="post" action="${base}/prompt" class="stack" data-chat-form>${hidden}<label>Message <textarea name="text" rows="3" required></textarea></label><button type="submit">Send</button></form></section>
<section><h2>Preview</h2><form method="get" class="row"><label>Port <input name="port" inputmode="numeric" value="${port}" size="6"></label><button type="submit">Show</button></form>
${s.status === 'running' ? html`<iframe class="preview-frame" title="Preview of port ${port}" src="${apiBase}/preview/${port}/" sandbox="allow-scripts allow-forms allow-same-origin"></iframe>` : html`<p class="muted">The preview shows while the session is running.</p>`}</section>`,
    }));
  });

  const action = (name: string, call: (req: Request, res: Response) => Promise<unknown>, notice: string, to?: (req: Request) => string) =>
    r.post(`/projects/:projectId/sessions/:sessionId/${name}`, requireCsrf, async (req, res) => {
      try {
        await call(req, res);
      } catch (e) {
        if (name === 'refresh' && e instanceof ApiError && e.status === 404 && /No route/.test(e.message)) {
          throw new DomainError('unavailable', 'Refresh unavailable', 'This server cannot refresh sandboxes yet.');
        }
        throw asDomain(e);
      }
      respond(req, res, to ? to(req) : back(req), notice);
    });
  action('stop', (req, res) => sessionsApi(apiOf(req, res)).stop(pid(req), sid(req)), 'stopped');
  action('restart', (req, res) => sessionsApi(apiOf(req, res)).restart(pid(req), sid(req)), 'restarted');
  action('refresh', (req, res) => apiOf(req, res).request('POST', `/projects/${encodeURIComponent(pid(req))}/sessions/${encodeURIComponent(sid(req))}/refresh`, {}), 'refreshed');
  action('remove', (req, res) => sessionsApi(apiOf(req, res)).remove(pid(req), sid(req)), 'removed', (req) => `/projects/${encodeURIComponent(pid(req))}/sessions`);
  action('prompt', (req, res) => sessionsApi(apiOf(req, res)).prompt(pid(req), sid(req), Prompt.parse(req.body ?? {}).text), 'prompted');
  return r;
}
