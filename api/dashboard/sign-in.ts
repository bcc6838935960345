import { randomBytes, timingSafeEqual } from 'node:crypto';
import { Router, type Request, type Response } from 'express';
import { z } from 'zod';
import { DomainError } from '../../domain/errors.js';
import type { ApiDeps } from '../deps.js';
import { verifyPassword } from '../../services/dashboard/passwords.js';
import { SESSION_COOKIE, SESSION_TTL_MS } from '../../services/dashboard/sessions.js';
import { checkOrigin, clearCookie, locals, readCookie, requireCsrf, setCookie } from './context.js';
import { html } from './html.js';
import { page } from './layout.js';

/**
 * Sign-in (email + password, or a pasted user token), sign-out, sign-out everywhere.
 * Failed sign-ins are counted per (email, client) in the database (so every API process
 * sees them) and back off per pair (services/dashboard/sign-in.ts): the form answers 429
 * with Retry-After to that client only; nobody can lock another person out.
 */
export const PRE_COOKIE = 'svc_pre';

const SignInBody = z.object({
  _csrf: z.string().max(200).default(''),
  email: z.string().max(320).optional(),
  password: z.string().max(1024).optional(),
  token: z.string().max(400).optional(),
  next: z.string().max(2000).optional(),
});

/** Only a path on this site: never `//evil.example` or a full URL. */
export const safeNext = (n: unknown) => (typeof n === 'string' && /^\/(?![/\\])/.test(n) ? n : '/projects');

function signInPage(res: Response, req: Request, o: { next: string; email?: string; error?: string; status?: number }) {
  const existing = readCookie(req, PRE_COOKIE);
  const pre = existing && /^[A-Za-z0-9_-]{20,64}$/.test(existing) ? existing : randomBytes(18).toString('base64url');
  if (pre !== existing) setCookie(req, res, PRE_COOKIE, pre, 3600);
  const csrf = locals(res).store.mac(`pre:${pre}`);
  res.status(o.status ?? 200).type('html').send(
    page({
      title: 'Sign in',
      notice: o.error ? { kind: 'error', text: o.error } : null,
      body: html`<section class="narrow">
<h1>Sign in to svc</h1>
<form method="post" action="/login" class="stack">
  <input type="hidden" name="_csrf" value="${csrf}"><input type="hidden" name="next" value="${o.next}">
  <label>Email <input type="email" name="email" autocomplete="username" required value="${o.email ?? ''}"></label>
  <label>Password <input type="password" name="password" autocomplete="current-password" required></label>
  <button type="submit">Sign in</button>
</form>
<details><summary>Sign in with a token instead</summary>
<form method="post" action="/login" class="stack">
  <input type="hidden" name="_csrf" value="${csrf}"><input type="hidden" name="next" value="${o.next}">
  <label>User token <input type="password" name="token" autocomplete="off" placeholder="svc_pat_..." required></label>
  <button type="submit">Sign in with token</button>
</form>
<p class="hint">An administrator sets passwords with <code>svc-server admin set-password</code>; any user token (from <code>svc-server admin bootstrap</code>) also works.</p>
</details>
</section>`,
    }),
  );
}

/** Failures are kept under the caller's principal key (AuthGuard.keyOf). */
export function signInRoutes(deps: Pick<ApiDeps, 'services' | 'guard'>): Router {
  const r = Router();
  const d = deps.services.dashboard;
  const clientKeyOf = (req: Request) => deps.guard.keyOf(req);

  r.get('/login', (req, res) => {
    if (locals(res).session) return res.redirect(303, safeNext(req.query.next));
    signInPage(res, req, { next: safeNext(req.query.next) });
  });

  r.post('/login', async (req, res) => {
    const body = SignInBody.parse(req.body ?? {});
    const next = safeNext(body.next);
    checkOrigin(req);
    const pre = readCookie(req, PRE_COOKIE) ?? '';
    const want = Buffer.from(locals(res).store.mac(`pre:${pre}`));
    const got = Buffer.from(body._csrf);
    if (!pre || want.length !== got.length || !timingSafeEqual(want, got)) {
      throw new DomainError('forbidden', 'CSRF check failed', 'The sign-in form expired; reload the page and try again.');
    }
    const client = clientKeyOf(req);
    const email = (body.email ?? '').trim().toLowerCase();
    const wait = await d.signInWait(email, client);
    if (wait > 0) {
      res.set('Retry-After', String(wait));
      return signInPage(res, req, { next, email, status: 429, error: 'Too many failed sign-ins. Wait a few minutes and try again.' });
    }

    let userId: string | undefined;
    if (body.token !== undefined && body.token.trim()) {
      const p = await deps.services.auth.authenticate(body.token.trim());
      if (p && !p.project_id) userId = p.user_id;
    } else if (email && body.password) {
      const user = await d.userByEmail(email);
      if (await verifyPassword(body.password, user?.password_hash)) userId = user!.user_id;
    }
    if (!userId) {
      await d.recordSignInFailure(email, client);
      const what = body.token !== undefined ? 'That is not a valid user token.' : 'Wrong email or password.';
      return signInPage(res, req, { next, email, status: 401, error: what });
    }
    if (email) await d.clearSignInFailures(email, client);
    const { cookie } = await locals(res).store.create(userId);
    setCookie(req, res, SESSION_COOKIE, cookie, Math.floor(SESSION_TTL_MS / 1000));
    clearCookie(req, res, PRE_COOKIE);
    res.redirect(303, next);
  });

  r.post('/logout', requireCsrf, async (req, res) => {
    const s = locals(res).session;
    if (s) await locals(res).store.revoke(s.session_id);
    clearCookie(req, res, SESSION_COOKIE);
    res.redirect(303, '/login');
  });

  /** Every browser of this user, this one included (as after `svc-server admin set-password`). */
  r.post('/logout/everywhere', requireCsrf, async (req, res) => {
    const s = locals(res).session;
    if (s) await locals(res).store.revokeAllOf(s.user.user_id);
    clearCookie(req, res, SESSION_COOKIE);
    res.redirect(303, '/login');
  });

  return r;
}
