import type { Request, RequestHandler } from 'express';
import { timingSafeEqual } from 'node:crypto';
import type { ApiDeps } from '../deps.js';
import { ownOrigin, readCookie } from './context.js';
import { SESSION_COOKIE } from '../../services/dashboard/sessions.js';
import { vouchFor } from '../auth.js';

/**
 * The cookie counts only on a same-origin request: `Sec-Fetch-Site: same-origin`, or (a
 * browser that sends no fetch metadata) an `Origin` equal to this server's. A page of
 * another origin (a preview included) that makes the browser call the proxy gets 401.
 */
export function sameOrigin(req: Request): boolean {
  const site = req.headers['sec-fetch-site'];
  if (site !== undefined) return site === 'same-origin';
  return req.headers.origin !== undefined && req.headers.origin === ownOrigin(req);
}

/**
 * The one place the API accepts the dashboard cookie: the agent proxy
 * (`.../sessions/:sessionId/agent/*`), which the session page's chat reaches with fetch and
 * an EventSource that cannot carry a bearer token. Never the preview proxy on this origin
 * (Bearer only: a browser sees previews on their own origin). A request with no
 * Authorization and a live dashboard cookie is given the session's own token, server-side
 * (it never reaches the browser). Reads only, unless the page's CSRF token comes along
 * as `X-CSRF-Token`: a cross-site form cannot drive the agent. And only from the
 * dashboard's own pages (`sameOrigin`).
 */
export function dashboardProxyAuth(deps: ApiDeps): RequestHandler {
  const store = deps.services.previews.dashboardSessions;
  return (req, _res, next) => {
    if (!/^\/agent(\/|$)/.test(req.path) || req.headers.authorization !== undefined || typeof req.query.access_token === 'string') return next();
    const cookie = readCookie(req, SESSION_COOKIE);
    if (!cookie || !sameOrigin(req)) return next();
    store()
      .then((s) => s.resolve(cookie))
      .then((session) => {
        if (!session) return next();
        const safe = req.method === 'GET' || req.method === 'HEAD';
        const sent = req.headers['x-csrf-token'];
        const a = Buffer.from(typeof sent === 'string' ? sent : '');
        const b = Buffer.from(session.csrf_token);
        if (safe || (a.length === b.length && timingSafeEqual(a, b))) {
          req.headers.authorization = `Bearer ${session.apiToken}`;
          vouchFor(req); // a signed cookie is no guess: never held back by its address's failed guesses
        }
        next();
      }, next);
  };
}
