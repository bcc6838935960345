import type { IncomingMessage } from 'node:http';
import {
  bearerMatches,
  contextFailureMessage,
  cookieValues,
  stripCookie,
  takeQueryParam,
  USER_CONTEXT_COOKIE,
  USER_CONTEXT_HEADER,
  USER_CONTEXT_QUERY,
  verifyUserContext,
  type UserContext,
} from './auth.js';
import { HttpError, unauthorized } from './http-util.js';

/** Where a proxied request goes, parsed from the request target. */
export interface ProxyTarget {
  port: number;
  /** Path and query for the upstream, `svc_ctx` removed. */
  path: string;
  /** Cookie scope for a preview cookie set from `?svc_ctx=`. */
  cookiePath: string;
  kind: 'runtime' | 'port';
}

/**
 * `/proxy/{port}/rest` -> `127.0.0.1:{port}/rest`; anything else -> the runtime. The
 * daemon's own port is refused (403) so a preview cannot loop back into the control
 * surface with the caller's context.
 */
export function parseTarget(url: string | undefined, runtimePort: number, ownPort: number): ProxyTarget {
  if (!url || !url.startsWith('/')) throw new HttpError(400, 'Bad request', 'The request target must be an origin-form path.');
  const q = url.indexOf('?');
  const pathname = q < 0 ? url : url.slice(0, q);
  const query = q < 0 ? '' : url.slice(q + 1);
  const { rest } = takeQueryParam(query, USER_CONTEXT_QUERY);
  const withQuery = (p: string) => (rest ? `${p}?${rest}` : p);
  if (pathname === '/proxy' || pathname.startsWith('/proxy/')) {
    const m = /^\/proxy\/([0-9]{1,5})(\/.*)?$/.exec(pathname);
    const port = m ? Number(m[1]) : NaN;
    if (!m || port < 1 || port > 65535) throw new HttpError(400, 'Bad request', 'Use /proxy/{port}/ with a port from 1 to 65535.');
    if (port === ownPort) throw new HttpError(403, 'Forbidden', "The daemon's own port cannot be proxied.");
    return { port, path: withQuery(m[2] ?? '/'), cookiePath: `/proxy/${port}`, kind: 'port' };
  }
  return { port: runtimePort, path: withQuery(pathname), cookiePath: '/', kind: 'runtime' };
}

/** What the authorization reads of a request (an IncomingMessage, or the raw proxy's head). */
export interface ProxyRequestLike {
  url?: string | undefined;
  headers: { [USER_CONTEXT_HEADER]?: string | string[] | undefined; cookie?: string | undefined; 'x-forwarded-proto'?: string | string[] | undefined };
}

/**
 * Checks the signed user context, taken from (in order) the header, `?svc_ctx=`, or the
 * preview cookie. A value that is present but invalid is refused even if a later source
 * would pass: the caller meant that one.
 */
export function authorizeProxy(
  req: ProxyRequestLike,
  target: ProxyTarget,
  key: string,
  nowSeconds: number,
): { context: UserContext; setCookie: string | undefined } {
  const header = req.headers[USER_CONTEXT_HEADER];
  const q = req.url?.indexOf('?') ?? -1;
  const fromQuery = q < 0 ? undefined : takeQueryParam(req.url!.slice(q + 1), USER_CONTEXT_QUERY).value;
  const candidates: { value: string; source: 'header' | 'query' | 'cookie' }[] = [];
  if (typeof header === 'string') candidates.push({ value: header.trim(), source: 'header' });
  else if (fromQuery !== undefined) candidates.push({ value: fromQuery, source: 'query' });
  else for (const value of cookieValues(req.headers.cookie, USER_CONTEXT_COOKIE)) candidates.push({ value, source: 'cookie' });
  if (candidates.length === 0) throw unauthorized(contextFailureMessage.missing);
  let failure: keyof typeof contextFailureMessage = 'missing';
  for (const c of candidates) {
    const check = verifyCached(key, c.value, target.port, nowSeconds);
    if (check.ok) {
      const setCookie = c.source === 'query' ? previewCookie(c.value, check.context.exp - nowSeconds, target.cookiePath, req) : undefined;
      return { context: check.context, setCookie };
    }
    failure = check.reason;
  }
  throw unauthorized(contextFailureMessage[failure]);
}

/**
 * Verified contexts by (key, value): a page's requests repeat one value, so its HMAC,
 * decoding and schema check run once; expiry and port are checked on every request.
 * Only successes are kept, at most 1,024 (then the cache starts over).
 */
const verified = new Map<string, UserContext>();
function verifyCached(key: string, value: string, port: number, nowSeconds: number): ReturnType<typeof verifyUserContext> {
  const id = `${key}\0${value}`;
  const hit = verified.get(id);
  if (hit) {
    if (hit.exp <= nowSeconds) return { ok: false, reason: 'expired' };
    if (hit.port !== undefined && hit.port !== port) return { ok: false, reason: 'wrong_port' };
    return { ok: true, context: hit };
  }
  const check = verifyUserContext(key, value, port, nowSeconds);
  if (check.ok) {
    if (verified.size >= 1024) verified.clear();
    verified.set(id, check.context);
  }
  return check;
}

function previewCookie(value: string, maxAge: number, cookiePath: string, req: ProxyRequestLike): string {
  const secure = req.headers['x-forwarded-proto'] === 'https';
  return [
    `${USER_CONTEXT_COOKIE}=${value}`,
    `Path=${cookiePath}`,
    `Max-Age=${Math.max(0, Math.floor(maxAge))}`,
    'HttpOnly',
    // A preview lives in an iframe of the dashboard: a cross-site context needs None+Secure.
    secure ? 'SameSite=None; Secure' : 'SameSite=Lax',
  ].join('; ');
}

export const HOP_BY_HOP: ReadonlySet<string> = new Set([
  'connection',
  'keep-alive',
  'proxy-connection',
  'proxy-authenticate',
  'proxy-authorization',
  'te',
  'trailer',
  'transfer-encoding',
  'upgrade',
  'http2-settings',
]);

/**
 * Request headers for the upstream: hop-by-hop headers dropped, and none of the daemon's
 * credentials (the signed context, its cookie, the control bearer) ever forwarded.
 */
export function upstreamRequestHeaders(req: IncomingMessage, token: string, upgrade: boolean): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  const h = req.headers;
  // Headers named by Connection are hop-by-hop too; the common values name none.
  const conn = h.connection;
  const listed = conn === undefined || /^\s*(keep-alive|close)\s*$/i.test(conn) ? null : new Set(conn.split(',').map((s) => s.trim().toLowerCase()).filter(Boolean));
  for (const name in h) {
    const value = h[name];
    if (value === undefined || HOP_BY_HOP.has(name) || name === USER_CONTEXT_HEADER || listed?.has(name)) continue;
    out[name] = value;
  }
  if (h.cookie !== undefined) {
    const cookie = stripCookie(h.cookie, USER_CONTEXT_COOKIE);
    if (cookie === undefined) delete out.cookie;
    else out.cookie = cookie;
  }
  if (h.authorization !== undefined && bearerMatches(h.authorization, token)) delete out.authorization;
  const remote = req.socket.remoteAddress;
  if (remote) {
    const prior = h['x-forwarded-for'];
    out['x-forwarded-for'] = prior ? `${String(prior)}, ${remote}` : remote;
  }
  if (h.host && !h['x-forwarded-host']) out['x-forwarded-host'] = h.host;
  if (!h['x-forwarded-proto']) out['x-forwarded-proto'] = 'http';
  if (upgrade) {
    out.connection = 'Upgrade';
    if (typeof h.upgrade === 'string') out.upgrade = h.upgrade;
  }
  return out;
}

/** Response headers for the client: hop-by-hop headers dropped. */
export function downstreamResponseHeaders(headers: NodeJS.Dict<string | string[]>): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const name in headers) {
    const value = headers[name];
    if (value === undefined || HOP_BY_HOP.has(name)) continue;
    out[name] = value;
  }
  return out;
}
