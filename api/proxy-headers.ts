import type http from 'node:http';

/**
 * What crosses the server's proxies to sandboxes, both ways. A sandbox runs code nobody
 * reviewed, so it receives no credential of the person viewing it, and its answers are
 * made harmless for the origin they are served on.
 */

/** Request headers that never reach a sandbox: hop-by-hop, credentials, where the viewer came from. */
export const NOT_FORWARDED = new Set([
  'connection', 'keep-alive', 'proxy-authenticate', 'proxy-authorization', 'te', 'trailer', 'transfer-encoding', 'upgrade', 'host',
  'authorization', 'x-svc-user-context', 'cookie', 'referer',
]);

/** A cookie of this server (the dashboard's, a preview's or an app's grant), under any prefix. */
export const isSvcCookie = (name: string): boolean => /^(__host-|__secure-)?svc_/i.test(name.trim());

/** A credential this server issued (`svc_pat_…`, `svc_sbx_…`, `svc_llm_…`, `svc_pool_…`) anywhere in a value. */
const SVC_CREDENTIAL = /svc_[a-z]+_[A-Za-z0-9_-]{8,}/i;

/** A request header no sandbox gets, whichever proxy: an `X-Svc-*` header, or one carrying a credential of this server. */
export const isSvcHeader = (name: string, value: string | string[]): boolean =>
  name.startsWith('x-svc-') || (Array.isArray(value) ? value : [value]).some((x) => SVC_CREDENTIAL.test(x));

const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-authenticate', 'proxy-authorization', 'te', 'trailer', 'transfer-encoding', 'upgrade', 'host']);

/**
 * A request to a page on its own origin (an app, a preview) as the sandbox gets it: its own
 * `Authorization` and cookies pass, as they would to any web server, but nothing of this
 * server does: no svc cookie, no `X-Svc-*` header, no header carrying a credential this
 * server issued (a personal token pasted into a client, a model key), no Referer from
 * another origin (the dashboard's path).
 */
export function ownOriginRequestHeaders(incoming: http.IncomingHttpHeaders, host: string | undefined): http.OutgoingHttpHeaders {
  const out: http.OutgoingHttpHeaders = {};
  for (const [k, v] of Object.entries(incoming)) {
    if (v === undefined || HOP_BY_HOP.has(k) || k === 'cookie' || isSvcHeader(k, v)) continue;
    if (k === 'referer' && !sameHost(v as string, host)) continue;
    out[k] = v;
  }
  const cookies = (incoming.cookie ?? '')
    .split(';')
    .map((p) => p.trim())
    .filter((p) => p && !isSvcCookie(p.split('=', 1)[0]!) && !SVC_CREDENTIAL.test(p));
  if (cookies.length) out.cookie = cookies.join('; ');
  return out;
}

const sameHost = (url: string, host: string | undefined): boolean => {
  try {
    return host !== undefined && new URL(url).host.toLowerCase() === host.toLowerCase();
  } catch {
    return false;
  }
};

/**
 * A response proxied on the dashboard/API origin (`…/agent/*`, `…/preview/:port/*`): it runs
 * in a unique opaque origin (`CSP: sandbox`: no script reaches the dashboard, its cookies or
 * storage), is never sniffed into HTML, sends no Referer onwards, grants no cross-origin
 * reads (`Access-Control-*` dropped) and sets no cookie on the dashboard's origin.
 */
export function apiOriginResponseHeaders(upstream: http.IncomingHttpHeaders): http.OutgoingHttpHeaders {
  const out: http.OutgoingHttpHeaders = {};
  for (const [k, v] of Object.entries(upstream)) {
    if (v === undefined || k === 'connection' || k === 'keep-alive' || k === 'set-cookie' || k.startsWith('access-control-')) continue;
    if (SITE_WIDE.has(k)) continue;
    if (k === 'content-security-policy' || k === 'content-security-policy-report-only' || k === 'x-content-type-options' || k === 'referrer-policy') continue;
    out[k] = v;
  }
  out['content-security-policy'] = 'sandbox';
  out['x-content-type-options'] = 'nosniff';
  out['referrer-policy'] = 'no-referrer';
  return out;
}

/**
 * Headers whose effect reaches past the origin that sent them: `Clear-Site-Data: "cookies"`
 * clears the whole site's (the dashboard's session with it), HSTS binds the host for all.
 * Sandbox bytes never send them, on any origin.
 */
const SITE_WIDE = new Set(['clear-site-data', 'strict-transport-security']);

/** One Set-Cookie value with any `Domain=` attribute removed (so it stays host-only). */
export function hostOnlyCookie(value: string): string {
  return value
    .split(';')
    .filter((part, i) => i === 0 || !/^\s*domain\s*=/i.test(part))
    .join(';');
}

/**
 * A response on an app's or a preview's own origin: its cookies stay on that host (no
 * `Domain=`, so no sibling origin gets them) and none may take a name of this server's
 * (its grant cookie, the dashboard's).
 */
export function ownOriginResponseHeaders(upstream: http.IncomingHttpHeaders): http.OutgoingHttpHeaders {
  const out: http.OutgoingHttpHeaders = {};
  for (const [k, v] of Object.entries(upstream)) {
    if (v === undefined || k === 'connection' || k === 'keep-alive' || SITE_WIDE.has(k)) continue;
    out[k] = v;
  }
  const cookies = (upstream['set-cookie'] ?? [])
    .filter((c) => !isSvcCookie(c.split('=', 1)[0]!))
    .map(hostOnlyCookie);
  if (cookies.length) out['set-cookie'] = cookies;
  else delete out['set-cookie'];
  return out;
}

/** A preview's own origin: as `ownOriginResponseHeaders`, and only the dashboard may frame it (an extra CSP, enforced alongside the app's own). */
export function previewOriginResponseHeaders(upstream: http.IncomingHttpHeaders, frameOrigin: string): http.OutgoingHttpHeaders {
  const out = ownOriginResponseHeaders(upstream);
  const csp = upstream['content-security-policy'] as string | string[] | undefined;
  const own = `frame-ancestors ${frameOrigin}`;
  (out as Record<string, string | string[]>)['content-security-policy'] = csp === undefined ? own : [...(Array.isArray(csp) ? csp : [csp]), own];
  return out;
}
