import http from 'node:http';
import type { Duplex } from 'node:stream';
import type { RequestHandler, Request, Response } from 'express';
import { isDomainError } from '../domain/errors.js';
import type { AppRow } from '../services/apps/service.js';
import { parseAppHost } from '../services/apps/origin.js';
import {
  APP_GRANT_PORT, appGrantId, PREVIEW_AUTH_PATH, PREVIEW_COOKIE, PREVIEW_COOKIE_TTL_S, signPreviewCookie, verifyPreviewCookie, type PreviewGrant,
} from '../services/previews/grants.js';
import { dashboardOrigin } from '../services/previews/origin.js';
import type { ApiDeps } from './deps.js';
import { bodyOf, statusOf } from './errors.js';
import { parseCookies } from './dashboard/context.js';
import { ownOriginRequestHeaders, ownOriginResponseHeaders } from './proxy-headers.js';
import { relayUpgrade, sandboxHost, sandboxRequest } from '../lib/sandbox-dial.js';
import { refuse } from './preview-host.js';
import { gatewayOf } from './gateway.js';

/**
 * Apps on their own origin (docs/manifest.md "Apps"). A request whose Host is
 * `<app>-<12 hex of the project id>.<apps domain>` is answered here, never by the API or
 * the dashboard: it goes to the app's sandbox through the target its deploy recorded (the
 * socket, as previews reach a session's), so an API process reaches apps a worker started.
 * A public app (`public = true`) takes anyone; any other app takes the project's members
 * only, by the previews' grant: without its cookie a navigation goes to the dashboard
 * (sign-in if need be), which checks access and sends the browser back with a one-time
 * code, redeemed here for a host-only `__Host-` cookie. The app never receives a
 * credential of this server, and none of its cookies reaches another origin.
 */

const send = (res: Response, status: number, body: { error: string; message: string }) => {
  res.status(status).set({ 'cache-control': 'no-store', 'x-content-type-options': 'nosniff' }).json(body);
};

const NO_APP = { error: 'Not found', message: 'There is no app at this address.' };
const SIGN_IN = { error: 'Unauthorized', message: "This app is open to its project's members: open it from the dashboard." };

/** The members-only grant a request carries for exactly this app, its user still a member. */
async function memberGrant(deps: ApiDeps, cookieHeader: string | undefined, app: AppRow): Promise<PreviewGrant | null> {
  const g = verifyPreviewCookie(await deps.services.previews.cookieKey(), parseCookies(cookieHeader)[PREVIEW_COOKIE]);
  if (!g || g.session_id !== appGrantId(app.name) || g.port !== APP_GRANT_PORT || g.project_id !== app.project_id) return null;
  try {
    await deps.services.projects.forCaller({ user_id: g.user_id, project_id: null }, g.project_id);
    return g;
  } catch (err) {
    if (isDomainError(err)) return null; // no longer a member, or the project is gone
    throw err;
  }
}

function upstreamHeaders(req: http.IncomingMessage, app: AppRow, secure: boolean): http.OutgoingHttpHeaders {
  const headers = ownOriginRequestHeaders(req.headers, req.headers.host);
  headers.host = req.headers.host ?? sandboxHost(app.target!); // the app's own name, as a browser sent it
  headers['x-forwarded-proto'] = secure ? 'https' : 'http';
  return headers;
}

const isNavigation = (req: Request) =>
  (req.method === 'GET' || req.method === 'HEAD') && (req.headers['sec-fetch-mode'] === 'navigate' || (req.headers['sec-fetch-mode'] === undefined && (req.headers.accept ?? '').includes('text/html')));

const isSecure = (req: http.IncomingMessage) => (req.socket as { encrypted?: boolean }).encrypted === true || req.headers['x-forwarded-proto'] === 'https';

/** Express middleware, before the previews' and the API: every request to an app host ends here. */
export function appHostHandler(deps: ApiDeps): RequestHandler {
  return (req, res, next) => {
    // Through a sandbox's gateway the Host header is the sandbox's to choose: it never names an
    // app there (that would be a way out of the sandbox past its egress policy).
    if (gatewayOf(req)) return next();
    const host = parseAppHost(req.headers.host, deps.settings);
    if (host === null) return next();
    if (host === 'unknown') return send(res, 404, NO_APP);
    (async () => {
      const app = await deps.services.apps.ofLabel(host.label, host.projectHex);
      if (!app || !app.target) return send(res, 404, NO_APP);
      if (req.path === PREVIEW_AUTH_PATH) return redeem(deps, req, res, app);
      if (app.spec.public !== true && !(await memberGrant(deps, req.headers.cookie, app))) {
        if (!isNavigation(req)) return send(res, 401, SIGN_IN);
        const back = `${dashboardOrigin(deps.settings, req.socket.localPort ?? 0)}/projects/${app.project_id}/apps/${app.name}/open?${new URLSearchParams({ path: req.originalUrl })}`;
        res.set({ 'cache-control': 'no-store', 'referrer-policy': 'no-referrer' }).redirect(303, back);
        return;
      }
      const up = sandboxRequest(app.target, { path: req.originalUrl, method: req.method, headers: upstreamHeaders(req, app, isSecure(req)) });
      up.on('response', (r) => {
        res.writeHead(r.statusCode ?? 502, ownOriginResponseHeaders(r.headers));
        res.flushHeaders();
        r.pipe(res);
      });
      up.on('error', () => (res.headersSent ? res.destroy() : send(res, 502, { error: 'Bad gateway', message: 'The app did not answer.' })));
      res.on('close', () => up.destroy());
      req.pipe(up);
    })().catch((err: unknown) => {
      if (res.headersSent) return void res.destroy();
      if (isDomainError(err)) return send(res, statusOf[err.code], bodyOf(err) as { error: string; message: string });
      deps.logger.error({ err: (err as Error).message }, 'app proxy failed');
      send(res, 502, { error: 'Bad gateway', message: 'The app could not be reached.' });
    });
  };
}

/** `PREVIEW_AUTH_PATH?code=…`: the dashboard's one-time code becomes this app's cookie. */
async function redeem(deps: ApiDeps, req: Request, res: Response, app: AppRow): Promise<void> {
  const code = typeof req.query.code === 'string' ? req.query.code : '';
  const g = req.method === 'GET' ? await deps.services.previews.redeemCode(code) : null;
  if (!g || g.session_id !== appGrantId(app.name) || g.port !== APP_GRANT_PORT || g.project_id !== app.project_id) {
    return send(res, 400, { error: 'Invalid app code', message: 'This link was used already or has expired; open the app from the dashboard again.' });
  }
  const value = signPreviewCookie(await deps.services.previews.cookieKey(), g);
  // Host-only (`__Host-`, Secure: browsers keep it on https and on http://*.localhost).
  // SameSite=Lax: it goes along when a person follows a link to the app.
  res.set({ 'cache-control': 'no-store', 'referrer-policy': 'no-referrer' });
  res.append('Set-Cookie', `${PREVIEW_COOKIE}=${value}; Path=/; Max-Age=${PREVIEW_COOKIE_TTL_S}; HttpOnly; Secure; SameSite=Lax`);
  res.redirect(303, g.path);
}

/** WebSocket upgrades on an app host; any other host goes to `fallback`. */
export function appUpgradeHandler(deps: ApiDeps, fallback: (req: http.IncomingMessage, socket: Duplex, head: Buffer) => void) {
  return (req: http.IncomingMessage, socket: Duplex, head: Buffer) => {
    const host = parseAppHost(req.headers.host, deps.settings);
    if (host === null) return fallback(req, socket, head);
    socket.on('error', () => {});
    if (host === 'unknown') return refuse(socket, 404, NO_APP);
    void (async () => {
      const app = await deps.services.apps.ofLabel(host.label, host.projectHex);
      if (!app || !app.target) return refuse(socket, 404, NO_APP);
      if (app.spec.public !== true) {
        // A members-only app's sockets open from its own pages only (the cookie is SameSite=Lax, not a guard).
        const origin = req.headers.origin;
        if (origin !== undefined && new URL(origin).host.toLowerCase() !== (req.headers.host ?? '').toLowerCase()) {
          return refuse(socket, 403, { error: 'Forbidden', message: 'Cross-origin WebSocket refused.' });
        }
        if (!(await memberGrant(deps, req.headers.cookie, app))) return refuse(socket, 401, SIGN_IN);
      }
      relayUpgrade(app.target, req, req.url ?? '/', upstreamHeaders(req, app, isSecure(req)), socket, head);
    })().catch((err: unknown) => {
      if (isDomainError(err)) return refuse(socket, statusOf[err.code], bodyOf(err) as { error: string; message: string });
      refuse(socket, 400, { error: 'Bad request', message: 'The upgrade could not be read.' });
    });
  };
}
