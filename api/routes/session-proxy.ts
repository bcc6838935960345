import http from 'node:http';
import type { Duplex } from 'node:stream';
import { Router, type NextFunction, type Request, type Response } from 'express';
import { DomainError, isDomainError } from '../../domain/errors.js';
import type { ApiDeps } from '../deps.js';
import { requireAuth } from '../auth.js';
import { bodyOf, statusOf } from '../errors.js';
import { apiOriginResponseHeaders, isSvcHeader, NOT_FORWARDED } from '../proxy-headers.js';
import { resolveProject } from '../project-access.js';
import type { Principal } from '../../services/tokens/service.js';
import type { LiveTarget } from '../../services/sessions/service.js';
import { freshContext } from '../../services/sessions/user-context.js';
import { sessionsOf } from './sessions.js';
import { proxiedSocketsOf } from '../proxy-sockets.js';
import { assertMay } from '../../services/tokens/agent-policy.js';

/** Agents do not drive sessions, their own included: the proxy is a person's way in. */
const PROXY_ACTION = { kind: 'other', what: 'use the session proxy' } as const;
import { relayUpgrade, sandboxHost, sandboxRequest } from '../../lib/sandbox-dial.js';
import { checkGateway } from '../gateway.js';

/**
 * The server fronts every sandbox: `.../sessions/:sessionId/agent/*` goes to the daemon
 * (which proxies to the agent runtime) and `.../preview/:port/*` to the daemon's
 * `/proxy/:port/*`, each with a freshly signed X-Svc-User-Context (the port bound into it
 * for previews). The caller's token never reaches the sandbox, and the sandbox's
 * SVC_TOKEN never leaves the server. Bodies stream both ways (SSE included); WebSocket
 * upgrades go through `sessionUpgradeHandler`. Mounted before the JSON body parser.
 */
// No credential of the caller (token, cookie) and no Referer reaches the sandbox (api/proxy-headers.ts).
const HOP = NOT_FORWARDED;

function forwardHeaders(incoming: http.IncomingHttpHeaders, target: string, ctx: string): http.OutgoingHttpHeaders {
  const out: http.OutgoingHttpHeaders = {};
  for (const [k, v] of Object.entries(incoming)) if (!HOP.has(k) && v !== undefined && !isSvcHeader(k, v)) out[k] = v;
  out.host = sandboxHost(target);
  out['x-svc-user-context'] = ctx;
  return out;
}

/** The path after the mount, minus `access_token` (a browser's way to authenticate a socket). */
function upstreamPath(prefix: string, rest: string): string {
  const u = new URL(rest || '/', 'http://x');
  u.searchParams.delete('access_token');
  return `${prefix}${u.pathname}${u.search}`;
}

function previewPort(raw: string): number {
  const port = /^[1-9][0-9]{0,4}$/.test(raw) ? Number(raw) : NaN;
  if (!(port >= 1 && port <= 65535)) {
    throw new DomainError('validation', 'Validation failed', 'The preview port must be a number from 1 to 65535.', { issues: [{ path: 'port', message: 'invalid port' }] });
  }
  return port;
}

export function sessionProxyRoutes(deps: ApiDeps): Router {
  const r = Router({ mergeParams: true });
  r.use('/agent', (req, _res, next) => {
    // Browsers may only be able to pass the token in the query (sockets). Not previews: on
    // this origin they take an Authorization header only, which no <script src>, <iframe>
    // or link can carry, so a sandbox's bytes never load as a page or script of this origin.
    const t = req.query.access_token;
    if (req.headers.authorization === undefined && typeof t === 'string') req.headers.authorization = `Bearer ${t}`;
    next();
  });
  r.use(['/agent', '/preview/:port'], requireAuth(deps.services.auth, deps.guard));
  const handler = (kind: 'agent' | 'preview') => async (req: Request, res: Response, next: NextFunction) => {
    try {
      assertMay(req.principal!, PROXY_ACTION);
      const port = kind === 'preview' ? previewPort(String(req.params.port)) : undefined;
      const project = await resolveProject(deps, req);
      const s = sessionsOf(deps);
      const target = await s.liveTarget(project.project_id, String(req.params.sessionId ?? ''));
      void s.touch(target.session.session_id);
      const path = upstreamPath(port !== undefined ? `/proxy/${port}` : '', req.url);
      const up = proxyHttp(req, res, target, path, freshContext(target.key, req.principal!.user_id, port), kind);
      // A stream (SSE) ends with its token and its session, as a socket does.
      if (target.session.sandbox) proxiedSocketsOf(deps).track({ client: res, upstream: up, tokenId: req.principal!.token_id, sandboxId: target.session.sandbox.sandbox_id });
    } catch (err) {
      next(err);
    }
  };
  r.use('/agent', handler('agent'));
  r.use('/preview/:port', handler('preview'));
  return r;
}

/**
 * What the agent proxy passes on this (the dashboard's) origin: JSON and event streams,
 * what the CLI and the dashboard's chat read, and answers without a body. Anything else a
 * sandbox sends (HTML, scripts, images) is refused, never served here: even under `CSP:
 * sandbox` and nosniff, a script this origin serves would run if a page of it loaded one.
 */
export function agentAnswerPasses(method: string, r: http.IncomingMessage): boolean {
  const type = String(r.headers['content-type'] ?? '').split(';')[0]!.trim().toLowerCase();
  if (type === 'text/event-stream' || /^application\/([a-z0-9.+-]+\+)?json$/.test(type)) return true;
  return method === 'HEAD' || r.statusCode === 204 || r.statusCode === 304 || (type === '' && r.headers['content-length'] === '0');
}

function proxyHttp(req: Request, res: Response, target: LiveTarget, path: string, ctx: string, kind: 'agent' | 'preview'): http.ClientRequest {
  const up = sandboxRequest(target.url, { path, method: req.method, headers: forwardHeaders(req.headers, target.url, ctx) });
  up.on('response', (r) => {
    if (kind === 'agent' && !agentAnswerPasses(req.method, r)) {
      r.resume();
      res.status(406).set({ 'cache-control': 'no-store', 'x-content-type-options': 'nosniff' }).json({
        error: 'Not acceptable',
        message: `The agent answered ${String(r.headers['content-type'] ?? 'without a content type').slice(0, 100)}: only JSON and event streams pass through the agent proxy; open other content as a preview on its own origin.`,
      });
      return;
    }
    // Served on the dashboard's origin: sandboxed, no cookies, no CORS (api/proxy-headers.ts).
    res.writeHead(r.statusCode ?? 502, apiOriginResponseHeaders(r.headers));
    res.flushHeaders();
    r.pipe(res);
  });
  up.on('error', (err) => {
    if (res.headersSent) return void res.destroy();
    res.status(502).json({ error: 'Bad gateway', message: `The sandbox did not answer: ${err.message}` });
  });
  res.on('close', () => up.destroy());
  req.pipe(up);
  return up;
}

const UPGRADE_PATH = /^\/v1\/projects\/([^/]+)\/sessions\/([^/]+)\/(agent|preview\/([^/]+))(\/[^?]*)?(\?.*)?$/;

function refuse(socket: Duplex, status: number, body: { error: string; message: string; retry_after?: unknown }) {
  const json = JSON.stringify(body);
  const retry = typeof body.retry_after === 'number' ? `Retry-After: ${body.retry_after}\r\n` : '';
  socket.end(
    `HTTP/1.1 ${status} ${http.STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\n${retry}` +
      `Content-Length: ${Buffer.byteLength(json)}\r\nConnection: close\r\n\r\n${json}`,
  );
  setTimeout(() => socket.destroy(), 1000).unref();
}

/** WebSocket upgrades to the session proxy; everything else goes to `fallback`. */
export function sessionUpgradeHandler(deps: ApiDeps, fallback: (req: http.IncomingMessage, socket: Duplex, head: Buffer) => void) {
  // Cut within a second of the token's revocation or the session's stop (api/proxy-sockets.ts).
  const watched = proxiedSocketsOf(deps);
  return (req: http.IncomingMessage, socket: Duplex, head: Buffer) => {
    const m = UPGRADE_PATH.exec(req.url ?? '');
    if (!m) return fallback(req, socket, head);
    socket.on('error', () => {});
    void (async () => {
      const q = new URLSearchParams(m[6] ?? '');
      // The query's token only for the agent: the preview proxy takes a header only (see above).
      const header = req.headers.authorization ?? (m[4] === undefined && q.get('access_token') ? `Bearer ${q.get('access_token')}` : undefined);
      const bearer = typeof header === 'string' ? /^Bearer ([^\s]+)$/i.exec(header.trim())?.[1] : undefined;
      const principal: Principal | null = bearer ? await deps.guard.attempt(req, () => deps.services.auth.authenticate(bearer)) : null;
      if (!principal) return refuse(socket, 401, { error: 'Unauthorized', message: 'A valid token is required.' });
      assertMay(principal, PROXY_ACTION);
      checkGateway(req, await deps.services.auth.credentialSandbox(principal)); // no sandbox credential on the public listener
      const port = m[4] !== undefined ? previewPort(decodeURIComponent(m[4])) : undefined;
      const fake = { params: { projectId: decodeURIComponent(m[1]!) }, principal } as unknown as Request;
      const project = await resolveProject(deps, fake);
      const s = sessionsOf(deps);
      const target = await s.liveTarget(project.project_id, decodeURIComponent(m[2]!));
      void s.touch(target.session.session_id);
      const path = upstreamPath(port !== undefined ? `/proxy/${port}` : '', `${m[5] ?? '/'}${m[6] ?? ''}`);
      const headers = forwardHeaders(req.headers, target.url, freshContext(target.key, principal.user_id, port));
      const up = relayUpgrade(target.url, req, path, headers, socket, head);
      if (target.session.sandbox) watched.track({ client: socket, upstream: up, tokenId: principal.token_id, sandboxId: target.session.sandbox.sandbox_id });
      else up.destroy();
    })().catch((err: unknown) => {
      if (isDomainError(err)) return refuse(socket, statusOf[err.code], bodyOf(err));
      deps.logger.error({ err: (err as Error).message }, 'session proxy upgrade failed');
      refuse(socket, 502, { error: 'Bad gateway', message: 'The sandbox could not be reached.' });
    });
  };
}
