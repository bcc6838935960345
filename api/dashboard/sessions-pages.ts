import { UNISOLATED_PROVIDERS } from '../../domain/sandbox.js';
import { Router, type Request, type Response } from 'express';
import { z } from 'zod';
import type { SessionServices } from '../../services/api-services/sessions.js';
import type { SessionView } from '../../services/sessions/view.js';
import type { ProjectRecord } from '../../domain/project.js';
import type { ChangeRequest } from '../../domain/change-request/index.js';
import type { ApiDeps } from '../deps.js';
import { sessionsOf } from '../routes/sessions.js';
import { CreateSessionBody, PromptSessionBody } from '../../contracts/sessions.js';
import { callerOf, csrfOf, projectOf, requireCsrf, userOf } from './context.js';
import { chatState, sessionCrs, usageFacts } from './session-chat.js';
import { html, timeAgo } from './html.js';
import { page } from './layout.js';
import { crumbsOf, noticeOf, respond, statusBadge } from './shared.js';

/**
 * Sessions (contracts.md "Sessions"): the list, and one session with its sandbox, errors,
 * the CRs its agent opened, tokens, Stop / Restart / Remove, Refresh (the daemon's /svc/refresh, through the
 * server), the conversation (prompts go through the server; with JS it is read from
 * the agent proxy, session-chat.ts and chat-render.ts) and a preview iframe for a port. The frame shows the preview's own
 * origin (`p<port>-<id>.<preview domain>`, through `preview-entry.ts`): `allow-same-origin`
 * there is that origin, never the dashboard's.
 */
const PageQuery = z.object({ port: z.string().regex(/^\d{1,5}$/).optional(), notice: z.string().optional(), error: z.string().optional() });
const Prompt = z.object({ _csrf: z.string().optional(), text: z.string().min(1).max(65_536), session_id: z.string().optional() });

/**
 * One row: what it was asked (its first prompt), where it stands (status, the agent's
 * state), what came of it (its CRs) and when it last did something.
 */
const sessionRow = (pid: string, s: SessionView, crs: ChangeRequest[]) => html`<tr data-session="${s.session_id}"><td><a href="/projects/${pid}/sessions/${s.session_id}">${s.title ? html`<span class="title">${s.title}</span>` : html`<span class="muted">no prompt yet</span>`} <code class="muted">${s.session_id.slice(0, 8)}</code></a>
<br><span class="muted">${s.agent}${s.model ? ` · ${s.model}` : ''} · from <code>${s.base_ref}</code></span></td>
<td>${statusBadge(s.status)}</td><td>${s.status === 'running' || s.agent_state === 'error' ? s.agent_state : '–'}</td>
<td>${crs.length ? crs.map((c, i) => html`${i ? ' ' : ''}<a href="/projects/${pid}/change-requests/${c.number}" title="${c.title} (${c.status})">#${c.number}</a>`) : html`<span class="muted">none</span>`}</td>
<td>${timeAgo(s.last_activity_at)}</td></tr>`;

export function sessionPages(deps: ApiDeps): Router {
  const r = Router();
  const changeRequests = deps.services.changeRequests;
  const sid = (req: Request) => String(req.params.sessionId);
  const pid = (req: Request) => String(req.params.projectId);
  const back = (req: Request) => `/projects/${encodeURIComponent(pid(req))}/sessions/${encodeURIComponent(sid(req))}`;

  r.get('/projects/:projectId/sessions', async (req, res) => {
    const project = await projectOf(deps, req, res);
    // A server without a session service still shows the page, saying so.
    const [list, crs] = await Promise.all([
      Promise.resolve()
        .then(() => sessionsOf(deps).list(project.project_id, null))
        .catch((e: unknown) => e as Error),
      changeRequests.list(project, 'all', { perPage: 100 }, callerOf(res).user_id).then((p) => p.change_requests).catch(() => [] as ChangeRequest[]),
    ]);
    const crsOf = (s: SessionView) => crs.filter((c) => c.origin_session_id === s.session_id || c.head_ref === s.branch);
    const base = `/projects/${project.project_id}/sessions`;
    res.type('html').send(page({
      title: `Sessions · ${project.name}`, user: userOf(res), csrf: csrfOf(res), crumbs: crumbsOf(project, { href: base, label: 'Sessions' }),
      body: html`<div data-live-src="/projects/${project.project_id}/live"></div><h1>Sessions</h1>
<form method="post" action="${base}" class="stack row"><input type="hidden" name="_csrf" value="${csrfOf(res)}">
<label>First prompt (optional) <input name="text" maxlength="65536"></label><button type="submit">New session</button></form>
<div data-live="sessions">${list instanceof Error
        ? html`<p class="warn">Sessions cannot be listed: ${list.message}</p>`
        : list.length === 0 ? html`<p class="muted">No sessions.</p>`
        : html`<table class="list"><thead><tr><th scope="col">Session</th><th scope="col">Status</th><th scope="col">Agent</th><th scope="col">Change requests</th><th scope="col">Last activity</th></tr></thead>
<tbody>${list.map((s) => sessionRow(project.project_id, s, crsOf(s)))}</tbody></table>`}</div>`,
    }));
  });

  r.post('/projects/:projectId/sessions', requireCsrf, async (req, res) => {
    const text = typeof req.body?.text === 'string' && req.body.text.trim() ? String(req.body.text).slice(0, 65_536) : undefined;
    const project = await projectOf(deps, req, res);
    const body = CreateSessionBody.parse(text ? { prompt: text } : {});
    const s = await sessionsOf(deps).create({
      project, userId: callerOf(res).user_id, agent: body.agent, model: body.model, baseRef: body.base_ref, prompt: body.prompt,
    });
    respond(req, res, `/projects/${encodeURIComponent(pid(req))}/sessions/${s.session_id}`, 'created', { session: s });
  });

  r.get('/projects/:projectId/sessions/:sessionId', async (req, res) => {
    const q = PageQuery.parse(req.query);
    const project = await projectOf(deps, req, res);
    const [s, crs] = await Promise.all([
      sessionsOf(deps).detail(project.project_id, sid(req)).then(async (v) => ({ ...v, saved: await deps.services.sandboxes.savedSummary(v.session_id) })),
      changeRequests.list(project, 'all', { perPage: 100 }, callerOf(res).user_id).then((p) => p.change_requests),
    ]);
    const base = `/projects/${project.project_id}/sessions/${s.session_id}`;
    const apiBase = `/v1/projects/${project.project_id}/sessions/${s.session_id}`;
    const port = q.port ? Number(q.port) : 3000;
    const csrf = csrfOf(res);
    const hidden = html`<input type="hidden" name="_csrf" value="${csrf}">`;
    const mine = crs.filter((c) => c.origin_session_id === s.session_id || c.head_ref === s.branch);
    const projectPath = `/projects/${project.project_id}`;
    res.type('html').send(page({
      title: `Session ${s.session_id.slice(0, 8)}`, user: userOf(res), csrf,
      crumbs: crumbsOf(project, { href: `/projects/${project.project_id}/sessions`, label: 'Sessions' }, { href: base, label: s.session_id.slice(0, 8) }),
      notice: noticeOf(q),
      body: html`<div data-live-src="/projects/${project.project_id}/live"></div>
<div data-live="session-head"><h1>Session <code>${s.session_id}</code></h1>
<dl class="facts"><dt>Status</dt><dd>${statusBadge(s.status)}</dd><dt>Branch</dt><dd><code>${s.branch}</code></dd><dt>Base</dt><dd><code>${s.base_ref}</code></dd>
<dt>Agent</dt><dd>${s.agent}${s.model ? ` (${s.model})` : ''}</dd><dt>Sandbox</dt><dd>${s.sandbox ? html`${s.sandbox.state} · ${s.sandbox.provider}${UNISOLATED_PROVIDERS.includes(s.sandbox.provider as never) ? ' (unisolated)' : ''}${s.sandbox.url ? html` · <code>${s.sandbox.url}</code>` : ''}` : '–'}</dd>
<dt>Agent state</dt><dd>${s.agent_state}</dd>${usageFacts(s.usage)}
<dt>Last activity</dt><dd>${timeAgo(s.last_activity_at)}</dd>
<dt>Saved</dt><dd>${s.saved ? html`${s.saved.wip_sha ? html`workspace <code>${s.saved.wip_sha.slice(0, 12)}</code>` : 'no workspace changes'} · ${s.saved.conversation ? 'the conversation' : 'no conversation'} · ${timeAgo(s.saved.saved_at)}${s.saved.skipped.length ? html`<br><span class="muted">skipped: ${s.saved.skipped.map((k) => `${k.path} (${k.bytes} bytes)`).join(', ')}</span>` : ''}` : '–'}</dd></dl>
${s.error ? html`<div class="preview bad" role="alert"><strong>${s.error.code}</strong>: ${s.error.message} <span class="muted">${timeAgo(s.error.at)}</span></div>` : ''}</div>
<div class="actions">
<form method="post" action="${base}/stop" data-fetch>${hidden}<button type="submit">Stop</button></form>
<form method="post" action="${base}/restart" data-fetch>${hidden}<button type="submit">Restart</button></form>
<form method="post" action="${base}/restart-fresh" data-confirm="Restart from the branch alone? The saved workspace and conversation are discarded.">${hidden}<button type="submit">Restart fresh</button></form>
<form method="post" action="${base}/refresh" data-fetch>${hidden}<button type="submit">Refresh</button></form>
<form method="post" action="${base}/remove" data-confirm="Stop and delete this session? Its branch stays.">${hidden}<button type="submit" class="danger">Remove</button></form>
</div>
${sessionCrs(projectPath, mine)}
<section class="chat" data-chat="${apiBase}/agent"><h2>Chat</h2>
${chatState(s)}
<div class="log" id="chat-log" aria-live="polite"></div>
<p class="chat-status muted" id="chat-status" aria-live="polite"></p>
<form method="post" action="${base}/prompt" class="stack" data-chat-form>${hidden}<input type="hidden" name="session_id" value=""><label>Message <textarea name="text" rows="3" required></textarea></label><button type="submit">Send</button></form></section>
<section><h2>Preview</h2><form method="get" class="row"><label>Port <input name="port" inputmode="numeric" value="${port}" size="6"></label><button type="submit">Show</button></form>
${s.status === 'running' ? html`<p><a href="${base}/preview/${port}" target="_blank" rel="noopener noreferrer">Open in a new tab</a></p>
<iframe class="preview-frame" title="Preview of port ${port}" src="${base}/preview/${port}" sandbox="allow-scripts allow-forms allow-same-origin allow-popups" referrerpolicy="no-referrer"></iframe>` : html`<p class="muted">The preview shows while the session is running.</p>`}</section>`,
    }));
  });

  /** A session action: the project as the signed-in user may see it, then the session in it (else 404). */
  const action = (name: string, call: (s: SessionServices, projectId: string, id: string, actor: string, req: Request, project: ProjectRecord) => Promise<unknown>, notice: string, to?: (req: Request) => string) =>
    r.post(`/projects/:projectId/sessions/:sessionId/${name}`, requireCsrf, async (req: Request, res: Response) => {
      const project = await projectOf(deps, req, res);
      const out = await call(sessionsOf(deps), project.project_id, sid(req), callerOf(res).user_id, req, project);
      // A prompt answers with the agent's conversation it went to (the chat pane continues it).
      const conversation = (out as { session_id?: unknown } | undefined)?.session_id;
      respond(req, res, to ? to(req) : back(req), notice, typeof conversation === 'string' ? { session_id: conversation } : {});
    });
  const found = async (s: SessionServices, projectId: string, id: string) => (await s.find(projectId, id)).session_id;
  action('stop', async (s, p, id, actor) => s.stop(p, await found(s, p, id), actor), 'stopped');
  action('restart', async (s, p, id, actor) => s.restart(p, await found(s, p, id), actor), 'restarted');
  action('restart-fresh', async (s, p, id, actor) => s.restart(p, await found(s, p, id), actor, { fresh: true }), 'restarted');
  action('refresh', (s, p, id) => s.refresh(p, id), 'refreshed');
  action('remove', async (s, p, id, actor) => s.remove(p, await found(s, p, id), actor), 'removed', (req) => `/projects/${encodeURIComponent(pid(req))}/sessions`);
  // As `POST …/prompt`: refused at once (409 no_model) when no model can answer; the
  // page's script passes the conversation it shows (`session_id`), so a prompt continues it.
  action('prompt', async (s, p, id, _actor, req, project) => {
    const b = Prompt.parse(req.body ?? {});
    const body = PromptSessionBody.parse({ text: b.text, ...(b.session_id ? { session_id: b.session_id } : {}) });
    const found = await s.find(p, id);
    await s.assertPromptable(project, found.session_id);
    return s.control(p, found.session_id, '/svc/prompt', body);
  }, 'prompted');
  return r;
}
