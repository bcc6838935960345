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
    if (k === 'content-security-policy' || k === 'content-security-policy-report-only' || k === 'x-content-type-options' || k === 'referrer-policy') continue;
    out[k] = v;
  }
  out['content-security-policy'] = 'sandbox';
  out['x-content-type-options'] = 'nosniff';
  out['referrer-policy'] = 'no-referrer';
  return out;
}

/** One Set-Cookie value with any `Domain=` attribute removed (so it stays host-only). */
export function hostOnlyCookie(value: string): string {
  return value
    .split(';')
    .filter((part, i) => i === 0 || !/^\s*domain\s*=/i.test(part))
    .join(';');
}

/**
 * A response on a preview's own origin: the app's cookies stay on that host (no `Domain=`),
 * it may not replace the server's preview cookie, and only the dashboard may frame it
 * (an extra CSP, which browsers enforce alongside the app's own).
 */
export function previewOriginResponseHeaders(upstream: http.IncomingHttpHeaders, frameOrigin: string, ownCookie: string): http.OutgoingHttpHeaders {
  const out: http.OutgoingHttpHeaders = {};
  for (const [k, v] of Object.entries(upstream)) {
    if (v === undefined || k === 'connection' || k === 'keep-alive') continue;
    out[k] = v;
  }
  const cookies = (upstream['set-cookie'] ?? [])
    .filter((c) => c.split('=', 1)[0]!.trim() !== ownCookie)
    .map(hostOnlyCookie);
  if (cookies.length) out['set-cookie'] = cookies;
  else delete out['set-cookie'];
  const csp = upstream['content-security-policy'] as string | string[] | undefined;
  const own = `frame-ancestors ${frameOrigin}`;
  (out as Record<string, string | string[]>)['content-security-policy'] = csp === undefined ? own : [...(Array.isArray(csp) ? csp : [csp]), own];
  return out;
}

/** The Cookie header without the named cookies (the preview's own and the dashboard's). */
export function cookieHeaderWithout(header: string | undefined, names: ReadonlySet<string>): string | undefined {
  if (!header) return undefined;
  const kept = header
    .split(';')
    .map((p) => p.trim())
    .filter((p) => p && !names.has(p.split('=', 1)[0]!.trim()));
  return kept.length ? kept.join('; ') : undefined;
}
