import { Router } from 'express';
import { z } from 'zod';
import { notFound } from '../../domain/errors.js';
import type { ApiDeps } from '../deps.js';
import { CreateTokenBody } from '../../contracts/accounts.js';
import { callerOf, csrfOf, requireCsrf, userOf } from './context.js';
import { html, timeAgo } from './html.js';
import { page } from './layout.js';
import { noticeOf, respond } from './shared.js';

/** Your tokens: list, create (shown once), revoke: the services behind /v1/accounts/tokens, as the signed-in user. */
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

const CreateBody = z.object({ _csrf: z.string().optional(), name: z.string().max(200).default(''), expires_in_days: z.string().regex(/^\d{0,4}$/).default('') });

interface TokenRow {
  token_id: string;
  name: string;
  project_id: string | null;
  created_at: string;
  expires_at: string | null;
  last_used_at: string | null;
}

const tokenTable = (tokens: TokenRow[], csrf: string) => html`<table class="list"><thead><tr><th scope="col">Name</th><th scope="col">Kind</th><th scope="col">Created</th><th scope="col">Last used</th><th scope="col">Expires</th><th scope="col"><span class="sr">Actions</span></th></tr></thead>
<tbody>${tokens.map((t) => html`<tr data-token="${t.token_id}"><td>${t.name || '(unnamed)'} <span class="muted">${t.token_id.slice(0, 8)}</span></td>
<td>${t.project_id ? html`project <a href="/projects/${t.project_id}">${t.project_id.slice(0, 8)}</a>` : 'user'}</td>
<td>${timeAgo(t.created_at)}</td><td>${t.last_used_at ? timeAgo(t.last_used_at) : 'never'}</td><td>${t.expires_at ? html`<time datetime="${t.expires_at}">${t.expires_at.slice(0, 10)}</time>` : 'never'}</td>
<td><form method="post" action="/tokens/${t.token_id}/revoke" data-confirm="Revoke this token? Anything using it stops working."><input type="hidden" name="_csrf" value="${csrf}"><button type="submit" class="danger">Revoke</button></form></td></tr>`)}</tbody></table>`;

export function tokensPage(deps: ApiDeps): Router {
  const r = Router();

  const render = async (req: Parameters<Parameters<Router['get']>[1]>[0], res: Parameters<Parameters<Router['get']>[1]>[1], created?: { token: string; name: string }) => {
    const tokens = (await deps.services.projects.listTokens(callerOf(res).user_id)).map((t) => ({
      ...t, created_at: t.created_at.toISOString(), expires_at: t.expires_at?.toISOString() ?? null, last_used_at: t.last_used_at?.toISOString() ?? null,
    }));
    const csrf = csrfOf(res);
    // The person's own tokens first; those issued to sandboxes grouped per session, folded.
    const own = tokens.filter((t) => !t.sandbox_id);
    const bySession = new Map<string, typeof tokens>();
    for (const t of tokens) {
      if (!t.sandbox_id) continue;
      const key = t.session_id ?? t.sandbox_id;
      bySession.set(key, [...(bySession.get(key) ?? []), t]);
    }
    res.type('html').set('Cache-Control', 'no-store').send(page({
      title: 'Tokens', user: userOf(res), csrf, crumbs: [{ href: '/tokens', label: 'Tokens' }],
      notice: noticeOf(req.query as Record<string, string>),
      body: html`<h1>Tokens</h1>
${created ? html`<div class="notice ok" role="alert"><p>New token <strong>${created.name || '(unnamed)'}</strong>. Copy it now: it is not shown again.</p><p><code class="secret" id="new-token">${created.token}</code></p></div>` : ''}
<form method="post" action="/tokens" class="stack row"><input type="hidden" name="_csrf" value="${csrf}">
<label>Name <input name="name" maxlength="200" placeholder="laptop"></label>
<label>Expires in days <input name="expires_in_days" inputmode="numeric" pattern="\\d{0,4}" placeholder="never"></label>
<button type="submit">Create token</button></form>
<h2>Your tokens</h2>
${own.length ? tokenTable(own, csrf) : html`<p class="muted">None yet: create one above for the CLI (<code>svc login --token</code>) or a script.</p>`}
${bySession.size ? html`<h2>Issued to sessions</h2>
<p class="muted">Each session's sandbox gets its own short-lived tokens (its CLI token, clone credentials); they are revoked when the session stops. Expired ones are not listed.</p>
${[...bySession.entries()].map(([key, list]) => html`<details class="session-tokens" data-session-tokens="${key}"><summary>${list[0]!.session_id && list[0]!.project_id
      ? html`Session <a href="/projects/${list[0]!.project_id}/sessions/${list[0]!.session_id}"><code>${list[0]!.session_id.slice(0, 8)}</code></a>`
      : html`Sandbox <code>${key.slice(0, 8)}</code>`} · ${list.length} token${list.length === 1 ? '' : 's'}</summary>${tokenTable(list, csrf)}</details>`)}` : ''}`,
    }));
  };

  r.get('/tokens', (req, res) => render(req, res));

  r.post('/tokens', requireCsrf, async (req, res) => {
    const b = CreateBody.parse(req.body ?? {});
    // The API's own rules for a new token (name, 1 to 3650 days).
    const body = CreateTokenBody.parse({ name: b.name, ...(b.expires_in_days ? { expires_in_days: Number(b.expires_in_days) } : {}) });
    const expiresAt = body.expires_in_days ? new Date(Date.now() + body.expires_in_days * 86_400_000) : null;
    const minted = await deps.services.projects.mintToken({ userId: callerOf(res).user_id, name: body.name ?? '', expiresAt });
    // The value is shown once, in this response, and never put in a URL.
    await render(req, res, minted);
  });

  r.post('/tokens/:tokenId/revoke', requireCsrf, async (req, res) => {
    const id = String(req.params.tokenId);
    // Anyone else's token, or an unknown one: 404, as the API answers.
    const done = UUID.test(id) && (await deps.services.projects.revokeToken(callerOf(res).user_id, id.toLowerCase()));
    if (!done) throw notFound('Token');
    respond(req, res, '/tokens', 'revoked');
  });

  return r;
}
