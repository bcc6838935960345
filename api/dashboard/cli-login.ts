import { Router, type Response } from 'express';
import { z } from 'zod';
import { DomainError } from '../../domain/errors.js';
import type { ApiDeps } from '../deps.js';
import { checkCallback, type CliLogin } from '../../services/dashboard/cli-logins.js';
import type { DashboardUser } from '../../services/dashboard/sessions.js';
import { csrfOf, requireCsrf, requireSession, userOf } from './context.js';
import { html } from './html.js';
import { page } from './layout.js';

/**
 * `svc login`'s browser step (services/dashboard/cli-logins.ts has the whole flow). The
 * CLI registered the login and printed a short code beside `/cli/login?state=…`; the
 * signed-in person types that code to approve "svc on <hostname>". A link alone approves
 * nothing, and the code goes only to the callback the CLI registered (any `callback` on
 * the link is ignored), where it redeems only with the CLI's PKCE verifier.
 */
const STATE = /^[A-Za-z0-9_-]{16,128}$/;
const Query = z.object({ state: z.string().regex(STATE, 'not a login state') });

const Decision = z.object({
  _csrf: z.string().optional(),
  state: z.string().regex(STATE),
  user_code: z.string().max(64).optional(),
  decision: z.enum(['approve', 'deny']),
});

/** An unknown, used or expired login (or one locked by wrong codes): 410, on the page and on the decision alike. */
const goneLink = () => new DomainError('gone', 'Login link used or expired', 'This login link was used already or has expired. Run svc login again.');

function approvalPage(res: Response, user: DashboardUser, login: CliLogin, o: { error?: string; status?: number } = {}) {
  const csrf = csrfOf(res);
  res.status(o.status ?? 200).type('html').send(
    page({
      title: 'Authorize the CLI',
      user,
      csrf,
      notice: o.error ? { kind: 'error', text: o.error } : null,
      body: html`<section class="narrow">
<h1>Authorize svc on ${login.hostname}?</h1>
<p>The svc command-line client on <strong>${login.hostname}</strong> asks for a token to act as <strong>${user.email}</strong> on every project of your accounts.</p>
<p class="hint">Only approve if you just ran <code>svc login</code> yourself: type the code it printed in your terminal. If someone sent you this link or a code, deny.</p>
<form method="post" action="/cli/login" class="stack"><input type="hidden" name="_csrf" value="${csrf}"><input type="hidden" name="state" value="${login.state}">
<label>Code from your terminal <input name="user_code" autocomplete="off" autocapitalize="characters" spellcheck="false" placeholder="XXXX-XXXX" maxlength="16" required></label>
<button type="submit" name="decision" value="approve" class="primary">Approve</button></form>
<form method="post" action="/cli/login"><input type="hidden" name="_csrf" value="${csrf}"><input type="hidden" name="state" value="${login.state}">
<button type="submit" name="decision" value="deny">Deny</button></form>
</section>`,
    }),
  );
}

export function cliLoginRoutes(deps: Pick<ApiDeps, 'services'>): Router {
  const r = Router();
  const logins = deps.services.dashboard;

  r.get('/cli/login', requireSession, async (req, res) => {
    const q = Query.parse(req.query);
    const login = await logins.openCliLogin(q.state);
    if (!login) throw goneLink();
    approvalPage(res, userOf(res), login);
  });

  r.post('/cli/login', requireSession, requireCsrf, async (req, res) => {
    const d = Decision.parse(req.body ?? {});
    const user = userOf(res);
    let row: Awaited<ReturnType<typeof logins.decideCliLogin>>;
    try {
      row = await logins.decideCliLogin(d.state, user.user_id, d.decision === 'approve' ? { approve: true, userCode: d.user_code ?? '' } : { approve: false });
    } catch (err) {
      const login = err instanceof DomainError && err.code === 'validation' ? await logins.openCliLogin(d.state) : undefined;
      if (!login) throw err instanceof DomainError && err.code === 'validation' ? goneLink() : err;
      return approvalPage(res, user, login, { status: 400, error: err instanceof DomainError ? err.message : 'Try again.' });
    }
    if (!row) throw goneLink();
    const target = checkCallback(row.callback);
    target.searchParams.set('state', d.state);
    if (row.code) target.searchParams.set('code', row.code);
    else target.searchParams.set('error', 'access_denied');
    res.set('Referrer-Policy', 'no-referrer').redirect(303, target.toString());
  });

  return r;
}
