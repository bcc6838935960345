import http from 'node:http';
import type { Duplex } from 'node:stream';
import type { RequestHandler, Request, Response } from 'express';
import { DomainError, isDomainError } from '../domain/errors.js';
import {
  PREVIEW_AUTH_PATH, PREVIEW_COOKIE, PREVIEW_COOKIE_TTL_S, signPreviewCookie, verifyPreviewCookie, type PreviewGrant,
} from '../services/previews/grants.js';
import { dashboardOrigin, parsePreviewHost } from '../services/previews/origin.js';
import type { LiveTarget } from '../services/sessions/service.js';
import { freshContext } from '../services/sessions/user-context.js';
import type { ApiDeps } from './deps.js';
import { isNothingListening, nothingListensPage, readSmallBody } from './preview-empty.js';
import { bodyOf, statusOf } from './errors.js';
import { parseCookies } from './dashboard/context.js';
import { ownOriginRequestHeaders, previewOriginResponseHeaders } from './proxy-headers.js';
import { relayUpgrade, sandboxHost, sandboxRequest } from '../lib/sandbox-dial.js';
import { sessionsOf } from './routes/sessions.js';
import { gatewayOf } from './gateway.js';

/**
 * Previews on their own origin (docs/sessions.md "Previews"). A request
 * whose Host is `p<port>-<session id>.<preview domain>` is answered here and never reaches
 * the API or the dashboard: with a valid preview cookie for that very (session, port) it
 * goes to the daemon's `/proxy/<port>/*` with a freshly signed user context; without one a
 * navigation is sent to the dashboard, which checks access and sends it back with a
 * one-time code (`PREVIEW_AUTH_PATH`), redeemed here for the cookie.
 */

const send = (res: Response, status: number, body: { error: string; message: string }) => {
  res.status(status).set({ 'cache-control': 'no-store', 'x-content-type-options': 'nosniff' }).json(body);
};

const fail = (res: Response, err: unknown, deps: ApiDeps) => {
  if (res.headersSent) return void res.destroy();
  if (isDomainError(err)) return send(res, statusOf[err.code], bodyOf(err) as { error: string; message: string });
  deps.logger.error({ err: (err as Error).message }, 'preview proxy failed');
  send(res, 502, { error: 'Bad gateway', message: 'The sandbox could not be reached.' });
};

/** The cookie's grant, if it is for exactly this preview host. */
async function grantOf(deps: ApiDeps, cookieHeader: string | undefined, host: { port: number; sessionId: string }): Promise<PreviewGrant | null> {
  const g = verifyPreviewCookie(await deps.services.previews.cookieKey(), parseCookies(cookieHeader)[PREVIEW_COOKIE]);
  return g && g.session_id === host.sessionId && g.port === host.port ? g : null;
}

/** The grant's user may still reach the project, and the session is running there. */
async function targetOf(deps: ApiDeps, g: PreviewGrant): Promise<LiveTarget> {
  const project = await deps.services.projects.forCaller({ user_id: g.user_id, project_id: null }, g.project_id);
  const s = sessionsOf(deps);
  const target = await s.liveTarget(project.project_id, g.session_id);
  void s.touch(g.session_id);
  return target;
}

/** The request as the sandbox gets it: no credential of this server, no `access_token`. */
function upstreamOf(req: http.IncomingMessage, target: LiveTarget, g: PreviewGrant): { path: string; headers: http.OutgoingHttpHeaders } {
  const u = new URL(req.url ?? '/', 'http://x');
  u.searchParams.delete('access_token');
  const headers = ownOriginRequestHeaders(req.headers, req.headers.host);
  headers.host = sandboxHost(target.url);
  headers['x-svc-user-context'] = freshContext(target.key, g.user_id, g.port);
  return { path: `/proxy/${g.port}${u.pathname}${u.search}`, headers };
}

const isNavigation = (req: Request) =>
  (req.method === 'GET' || req.method === 'HEAD') && (req.headers['sec-fetch-mode'] === 'navigate' || (req.headers['sec-fetch-mode'] === undefined && (req.headers.accept ?? '').includes('text/html')));

/** Express middleware, first in the app: every request to a preview host ends here. */
export function previewHostHandler(deps: ApiDeps): RequestHandler {
  return (req, res, next) => {
    // Through a sandbox's gateway the Host header is the sandbox's to choose: it never names a preview there.
    if (gatewayOf(req)) return next();
    const host = parsePreviewHost(req.headers.host, deps.settings);
    if (host === null) return next();
    if (host === 'unknown') return send(res, 404, { error: 'Not found', message: 'There is no preview at this address.' });
    (async () => {
      if (req.path === PREVIEW_AUTH_PATH) return redeem(deps, req, res, host);
      const g = await grantOf(deps, req.headers.cookie, host);
      if (!g) {
        const projectId = isNavigation(req) ? await deps.services.previews.projectOfSession(host.sessionId) : null;
        if (!projectId) return send(res, 401, { error: 'Unauthorized', message: 'Open this preview from the dashboard.' });
        const back = `${dashboardOrigin(deps.settings, req.socket.localPort ?? 0)}/projects/${projectId}/sessions/${host.sessionId}/preview/${host.port}?${new URLSearchParams({ path: req.originalUrl })}`;
        res.set({ 'cache-control': 'no-store', 'referrer-policy': 'no-referrer' }).redirect(303, back);
        return;
      }
      const target = await targetOf(deps, g);
      const { path, headers } = upstreamOf(req, target, g);
      const up = sandboxRequest(target.url, { path, method: req.method, headers });
      up.on('response', (r) => {
        if (r.statusCode === 502 && isNavigation(req)) {
          void readSmallBody(r).then((body) => {
            if (!body) return void res.destroy();
            if (body.complete && isNothingListening(body.head, g.port)) {
              const own = { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store', 'retry-after': '5', 'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'" };
              return void res.writeHead(503, previewOriginResponseHeaders(own, g.frame_origin)).end(nothingListensPage(g.port));
            }
            res.writeHead(502, previewOriginResponseHeaders(r.headers, g.frame_origin));
            res.write(body.head);
            if (body.complete) return void res.end();
            r.pipe(res);
          });
          return;
        }
        res.writeHead(r.statusCode ?? 502, previewOriginResponseHeaders(r.headers, g.frame_origin));
        res.flushHeaders();
        r.pipe(res);
      });
      up.on('error', (err) => fail(res, new DomainError('unavailable', 'Bad gateway', `The sandbox did not answer: ${err.message}`), deps));
      res.on('close', () => up.destroy());
      req.pipe(up);
    })().catch((err: unknown) => fail(res, err, deps));
  };
}

/** `PREVIEW_AUTH_PATH?code=…`: the dashboard's one-time code becomes this origin's cookie. */
async function redeem(deps: ApiDeps, req: Request, res: Response, host: { port: number; sessionId: string }): Promise<void> {
  const code = typeof req.query.code === 'string' ? req.query.code : '';
  const g = req.method === 'GET' ? await deps.services.previews.redeemCode(code) : null;
  if (!g || g.session_id !== host.sessionId || g.port !== host.port) {
    return send(res, 400, { error: 'Invalid preview code', message: 'This preview link was used already or has expired; open the preview from the dashboard again.' });
  }
  const value = signPreviewCookie(await deps.services.previews.cookieKey(), g);
  // `__Host-` needs Secure; browsers accept Secure cookies on http://*.localhost (a secure
  // context). SameSite=None + Partitioned: the cookie works inside the dashboard's frame
  // (a third-party context) and only there or on the preview itself, never from another site.
  res.set({ 'cache-control': 'no-store', 'referrer-policy': 'no-referrer' });
  res.append('Set-Cookie', `${PREVIEW_COOKIE}=${value}; Path=/; Max-Age=${PREVIEW_COOKIE_TTL_S}; HttpOnly; Secure; SameSite=None; Partitioned`);
  res.redirect(303, g.path);
}

/** An upgrade refused on its raw socket (no HTTP response object exists for it), with the error body. */
export function refuse(socket: Duplex, status: number, body: { error: string; message: string }) {
  const json = JSON.stringify(body);
  socket.end(`HTTP/1.1 ${status} ${http.STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(json)}\r\nConnection: close\r\n\r\n${json}`);
  setTimeout(() => socket.destroy(), 1000).unref();
}

/** WebSocket upgrades on a preview host (dev servers' live reload); any other host goes to `fallback`. */
export function previewUpgradeHandler(deps: ApiDeps, fallback: (req: http.IncomingMessage, socket: Duplex, head: Buffer) => void) {
  return (req: http.IncomingMessage, socket: Duplex, head: Buffer) => {
    const host = parsePreviewHost(req.headers.host, deps.settings);
    if (host === null) return fallback(req, socket, head);
    socket.on('error', () => {});
    if (host === 'unknown') return refuse(socket, 404, { error: 'Not found', message: 'There is no preview at this address.' });
    void (async () => {
      // Only the preview's own pages open its sockets.
      const origin = req.headers.origin;
      if (origin !== undefined && new URL(origin).host.toLowerCase() !== (req.headers.host ?? '').toLowerCase()) {
        return refuse(socket, 403, { error: 'Forbidden', message: 'Cross-origin WebSocket refused.' });
      }
      const g = await grantOf(deps, req.headers.cookie, host);
      if (!g) return refuse(socket, 401, { error: 'Unauthorized', message: 'Open this preview from the dashboard.' });
      const target = await targetOf(deps, g);
      const { path, headers } = upstreamOf(req, target, g);
      relayUpgrade(target.url, req, path, headers, socket, head);
    })().catch((err: unknown) => {
      if (isDomainError(err)) return refuse(socket, statusOf[err.code], bodyOf(err) as { error: string; message: string });
      refuse(socket, 400, { error: 'Bad request', message: 'The upgrade could not be read.' });
    });
  };
}
