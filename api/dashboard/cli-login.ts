import { Router } from 'express';
import { z } from 'zod';
import { DomainError, validationError } from '../../domain/errors.js';
import type { Db } from '../../infra/db/db.js';
import { registerCliLogin, useCliLogin } from '../../services/dashboard/cli-logins.js';
import { csrfOf, requireCsrf, requireSession, userOf } from './context.js';
import { html } from './html.js';
import { page } from './layout.js';

/**
 * `svc login`'s browser step. The CLI opens `/cli/login?callback=&state=&host=&hostname=`
 * with a one-shot server on 127.0.0.1. The signed-in person approves "svc on <hostname>":
 * the browser is sent to the callback with a one-time code, which the CLI redeems for a
 * user token (`POST /v1/cli/login/token`, api/routes/cli-login.ts) within two minutes. The
 * state is registered on first sight and consumed once (approve or deny), within ten minutes.
 */
const TTL_MS = 10 * 60_000;

const Query = z.object({
  callback: z.string().max(200),
  state: z.string().regex(/^[A-Za-z0-9_-]{16,128}$/, 'not a login state'),
  host: z.string().max(200).optional(),
  hostname: z.string().max(200).optional(),
});

const Decision = z.object({
  _csrf: z.string().optional(),
  state: z.string().regex(/^[A-Za-z0-9_-]{16,128}$/),
  decision: z.enum(['approve', 'deny']),
});

/** Only a loopback callback on the CLI's own one-shot server. */
export function checkCallback(raw: string): URL {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw validationError('The login link is broken: callback is not a URL.', [{ path: 'callback', message: 'not a URL' }]);
  }
  const loopback = u.hostname === '127.0.0.1' || u.hostname === 'localhost' || u.hostname === '[::1]';
  if (u.protocol !== 'http:' || !loopback || !u.port || u.pathname !== '/callback' || u.search || u.username || u.password) {
    throw validationError('The login link is not from the svc CLI: its callback must be http://127.0.0.1:<port>/callback.', [
      { path: 'callback', message: 'not a loopback callback' },
    ]);
  }
  return u;
}

const cleanName = (s: string | undefined) => (s ?? '').replace(/[^\w.@-]/g, '').slice(0, 64);

/**
 * A used, unknown or expired login link: 410 on the page (GET) and on the decision (POST)
 * alike, rendered as every dashboard error is (a page to a browser, the API's JSON otherwise).
 */
const usedLink = () => new DomainError('gone', 'Login link already used', 'This login link was used already. Run svc login again for a new one.');
const expiredLink = () => new DomainError('gone', 'Login link expired', 'This login link has expired. Run svc login again.');

export function cliLoginRoutes(db: Db): Router {
  const r = Router();

  r.get('/cli/login', requireSession, async (req, res) => {
    const q = Query.parse(req.query);
    checkCallback(q.callback);
    const user = userOf(res);
    const hostname = cleanName(q.hostname) || cleanName(q.host) || 'this computer';
    const row = await registerCliLogin(db, { state: q.state, callback: q.callback, hostname, userId: user.user_id, expiresAt: new Date(Date.now() + TTL_MS) });
    if (!row || row.used_at || row.user_id !== user.user_id || row.callback !== q.callback) {
      throw usedLink();
    }
    if (row.expires_at.getTime() <= Date.now()) throw expiredLink();
    const csrf = csrfOf(res);
    res.type('html').send(
      page({
        title: 'Authorize the CLI',
        user,
        csrf,
        body: html`<section class="narrow">
<h1>Authorize svc on ${hostname}?</h1>
<p>The svc command-line client on <strong>${hostname}</strong> asks for a token to act as <strong>${user.email}</strong> on every project of your accounts.</p>
<p class="hint">Only approve if you just ran <code>svc login</code> yourself.</p>
<div class="actions">
<form method="post" action="/cli/login"><input type="hidden" name="_csrf" value="${csrf}"><input type="hidden" name="state" value="${q.state}">
<button type="submit" name="decision" value="approve" class="primary">Approve</button></form>
<form method="post" action="/cli/login"><input type="hidden" name="_csrf" value="${csrf}"><input type="hidden" name="state" value="${q.state}">
<button type="submit" name="decision" value="deny">Deny</button></form>
</div>
</section>`,
      }),
    );
  });

  r.post('/cli/login', requireSession, requireCsrf, async (req, res) => {
    const d = Decision.parse(req.body ?? {});
    const user = userOf(res);
    const approve = d.decision === 'approve';
    const row = await useCliLogin(db, d.state, user.user_id, approve ? 'approved' : 'denied');
    if (!row) throw new DomainError('gone', 'Login link used or expired', 'This login link was used already or has expired. Run svc login again.');
    const target = checkCallback(row.callback);
    target.searchParams.set('state', d.state);
    if (row.code) {
      target.searchParams.set('code', row.code);
    } else {
      target.searchParams.set('error', 'access_denied');
    }
    res.set('Referrer-Policy', 'no-referrer').redirect(303, target.toString());
  });

  return r;
}
