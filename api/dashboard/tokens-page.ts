import { Router } from 'express';
import { z } from 'zod';
import { apiOf, asDomain, csrfOf, requireCsrf, userOf } from './context.js';
import { html, timeAgo } from './html.js';
import { page } from './layout.js';
import { noticeOf, respond } from './shared.js';

/** Your tokens: list, create (shown once), revoke. Built on /v1/accounts/tokens. */
interface TokenRow {
  token_id: string;
  name: string;
  project_id: string | null;
  created_at: string;
  expires_at: string | null;
  last_used_at: string | null;
}

const CreateBody = z.object({ _csrf: z.string().optional(), name: z.string().max(200).default(''), expires_in_days: z.string().regex(/^\d{0,4}$/).default('') });

export function tokensPage(): Router {
  const r = Router();

  const render = async (req: Parameters<Parameters<Router['get']>[1]>[0], res: Parameters<Parameters<Router['get']>[1]>[1], created?: { token: string; name: string }) => {
    const { tokens } = await apiOf(req, res).request<{ tokens: TokenRow[] }>('GET', '/accounts/tokens');
    const csrf = csrfOf(res);
    res.type('html').set('Cache-Control', 'no-store').send(page({
      title: 'Tokens', user: userOf(res), csrf, crumbs: [{ href: '/tokens', label: 'Tokens' }],
      notice: noticeOf(req.query as Record<string, string>),
      body: html`<h1>Tokens</h1>
${created ? html`<div class="notice ok" role="alert"><p>New token <strong>${created.name || '(unnamed)'}</strong>. Copy it now: it is not shown again.</p><p><code class="secret" id="new-token">${created.token}</code></p></div>` : ''}
<form method="post" action="/tokens" class="stack row"><input type="hidden" name="_csrf" value="${csrf}">
<label>Name <input name="name" maxlength="200" placeholder="laptop"></label>
<label>Expires in days <input name="expires_in_days" inputmode="numeric" pattern="\\d{0,4}" placeholder="never"></label>
<button type="submit">Create token</button></form>
<table class="list"><thead><tr><th scope="col">Name</th><th scope="col">Kind</th><th scope="col">Created</th><th scope="col">Last used</th><th scope="col">Expires</th><th scope="col"><span class="sr">Actions</span></th></tr></thead>
<tbody>${tokens.map((t) => html`<tr><td>${t.name || '(unnamed)'} <span class="muted">${t.token_id.slice(0, 8)}</span></td>
<td>${t.project_id ? html`project <a href="/projects/${t.project_id}">${t.project_id.slice(0, 8)}</a>` : 'user'}</td>
<td>${timeAgo(t.created_at)}</td><td>${t.last_used_at ? timeAgo(t.last_used_at) : 'never'}</td><td>${t.expires_at ? html`<time datetime="${t.expires_at}">${t.expires_at.slice(0, 10)}</time>` : 'never'}</td>
<td><form method="post" action="/tokens/${t.token_id}/revoke" data-confirm="Revoke this token? Anything using it stops working."><input type="hidden" name="_csrf" value="${csrf}"><button type="submit" class="danger">Revoke</button></form></td></tr>`)}</tbody></table>`,
    }));
  };

  r.get('/tokens', (req, res) => render(req, res));

  r.post('/tokens', requireCsrf, async (req, res) => {
    const b = CreateBody.parse(req.body ?? {});
    const minted = await apiOf(req, res)
      .request<{ token: string; name: string }>('POST', '/accounts/tokens', { name: b.name, ...(b.expires_in_days ? { expires_in_days: Number(b.expires_in_days) } : {}) })
      .catch((e) => { throw asDomain(e); });
    // The value is shown once, in this response, and never put in a URL.
    await render(req, res, minted);
  });

  r.post('/tokens/:tokenId/revoke', requireCsrf, async (req, res) => {
    await apiOf(req, res).request('DELETE', `/accounts/tokens/${encodeURIComponent(String(req.params.tokenId))}`).catch((e) => { throw asDomain(e); });
    respond(req, res, '/tokens', 'revoked');
  });

  return r;
}
