import type { Request, RequestHandler, Response } from 'express';
import { timingSafeEqual } from 'node:crypto';
import { DomainError } from '../../domain/errors.js';
import type { ProjectRecord } from '../../domain/project.js';
import type { ProjectCaller } from '../../services/projects/access.js';
import type { ApiDeps } from '../deps.js';
import type { DashboardSession, SessionStore } from '../../services/dashboard/sessions.js';
import { SESSION_COOKIE } from '../../services/dashboard/sessions.js';
import { isLoopbackHost } from '../../services/previews/origin.js';

/** Per-request state of the dashboard, on `res.locals`. */
export interface DashLocals {
  session: DashboardSession | null;
  store: SessionStore;
}

export const locals = (res: Response) => res.locals as unknown as DashLocals;

export function parseCookies(header: string | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const part of (header ?? '').split(';')) {
    const i = part.indexOf('=');
    if (i < 0) continue;
    const k = part.slice(0, i).trim();
    if (!k || k in out) continue;
    try {
      out[k] = decodeURIComponent(part.slice(i + 1).trim());
    } catch {
      /* a malformed cookie is no cookie */
    }
  }
  return out;
}

export const isSecure = (req: Request) => req.protocol === 'https' || req.headers['x-forwarded-proto'] === 'https';

const requestHostname = (req: Request) => {
  const h = (req.headers.host ?? '').trim().toLowerCase();
  return h.startsWith('[') ? h.replace(/\]:\d*$/, ']') : h.replace(/:\d*$/, '');
};

/**
 * The name a dashboard cookie has on this request: `__Host-<base>` (Secure, host-only,
 * Path=/), which no other origin can set, replace or shadow, not even an app or preview
 * under a sibling name of the same site (cookie tossing). Browsers keep Secure cookies on
 * https and on loopback http (`localhost`, `*.localhost`, 127.0.0.1). Plain http on any
 * other host would drop them: there the bare name is used, without that protection
 * (docs/dashboard.md: serve a shared server over https).
 */
export function cookieName(req: Request, base: string): string {
  return isSecure(req) || isLoopbackHost(requestHostname(req)) ? `__Host-${base}` : base;
}

/** The dashboard cookie `base` as this request carries it (under the name `cookieName` gives). */
export const readCookie = (req: Request, base: string): string | undefined => parseCookies(req.headers.cookie)[cookieName(req, base)];

export function setCookie(req: Request, res: Response, base: string, value: string, maxAgeS: number | null): void {
  const name = cookieName(req, base);
  const attrs = [`${name}=${encodeURIComponent(value)}`, 'Path=/', 'HttpOnly', 'SameSite=Lax'];
  if (maxAgeS !== null) attrs.push(`Max-Age=${maxAgeS}`);
  if (name.startsWith('__Host-')) attrs.push('Secure');
  res.append('Set-Cookie', attrs.join('; '));
}

export const clearCookie = (req: Request, res: Response, base: string) => setCookie(req, res, base, '', 0);

/** Loads the session behind the cookie (or none); never fails the request. */
export function loadSession(store: () => Promise<SessionStore>): RequestHandler {
  return (req, res, next) => {
    store().then(async (s) => {
      const l = locals(res);
      l.store = s;
      l.session = await s.resolve(readCookie(req, SESSION_COOKIE));
      next();
    }, next);
  };
}

const wantsJson = (req: Request) => (req.headers.accept ?? '').includes('application/json') && !(req.headers.accept ?? '').includes('text/html');

/** Pages need a signed-in browser: GETs go to the sign-in page and come back after. */
export const requireSession: RequestHandler = (req, res, next) => {
  if (locals(res).session) return next();
  if (req.method === 'GET' && !wantsJson(req)) {
    res.redirect(303, `/login?${new URLSearchParams({ next: req.originalUrl })}`);
    return;
  }
  next(new DomainError('unauthorized', 'Unauthorized', 'Sign in first.'));
};

const same = (a: string, b: string) => {
  const x = Buffer.from(a);
  const y = Buffer.from(b);
  return x.length === y.length && timingSafeEqual(x, y);
};

/** The browser's origin as this server sees it. */
export const ownOrigin = (req: Request) => `${isSecure(req) ? 'https' : 'http'}://${req.headers.host ?? ''}`;

/**
 * CSRF, for every request that changes state: the Origin (or Referer) must be this
 * server when the browser sends one, and the session's token must come back as the
 * `_csrf` form field or the `X-CSRF-Token` header. SameSite=Lax already keeps the
 * cookie off cross-site POSTs; this holds even where it does not.
 */
export function checkOrigin(req: Request): void {
  const origin = req.headers.origin ?? (req.headers.referer ? safeOrigin(req.headers.referer) : undefined);
  if (origin !== undefined && origin !== ownOrigin(req)) {
    throw new DomainError('forbidden', 'Cross-site request refused', 'This form was not sent from this dashboard.');
  }
}

const safeOrigin = (u: string) => {
  try {
    return new URL(u).origin;
  } catch {
    return 'null';
  }
};

export const requireCsrf: RequestHandler = (req, res, next) => {
  if (req.method === 'GET' || req.method === 'HEAD') return next();
  try {
    checkOrigin(req);
    const session = locals(res).session;
    const sent = (req.body && typeof req.body === 'object' ? (req.body as Record<string, unknown>)._csrf : undefined) ?? req.headers['x-csrf-token'];
    if (!session || typeof sent !== 'string' || !same(sent, session.csrf_token)) {
      throw new DomainError('forbidden', 'CSRF check failed', 'The form expired or did not come from this dashboard; reload the page and try again.');
    }
    next();
  } catch (err) {
    next(err);
  }
};

/**
 * The signed-in user as the services' caller. Pages call services directly with it (not
 * the HTTP API), under the same access rules the API's routes use.
 */
export function callerOf(res: Response): ProjectCaller {
  const s = locals(res).session;
  if (!s) throw new DomainError('unauthorized', 'Unauthorized', 'Sign in first.');
  return { user_id: s.user.user_id, project_id: null };
}

/** `:projectId` (uuid or slug) as the signed-in user may see it: another account's project is a 404, as in the API. */
export function projectOf(deps: Pick<ApiDeps, 'services'>, req: Request, res: Response): Promise<ProjectRecord> {
  return deps.services.projects.forCaller(callerOf(res), String(req.params.projectId ?? ''));
}

export const userOf = (res: Response) => locals(res).session!.user;
export const csrfOf = (res: Response) => locals(res).session?.csrf_token ?? '';

