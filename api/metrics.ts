import { timingSafeEqual, createHash } from 'node:crypto';
import type { Express, Request, RequestHandler } from 'express';
import client from 'prom-client';
import { gatewayOf } from './gateway.js';

export interface Metrics {
  registry: client.Registry;
  httpDuration: client.Histogram<'method' | 'route' | 'status'>;
  merges: client.Counter<'outcome'>;
}

/** `also`: other registries served on the same /metrics (the periodic jobs', workers/supervisor.ts). */
export function createMetrics(also: client.Registry[] = []): Metrics {
  const own = new client.Registry();
  client.collectDefaultMetrics({ register: own });
  const registers = [own];
  const m = {
    httpDuration: new client.Histogram({
      name: 'svc_http_request_duration_seconds',
      help: 'HTTP request duration by route',
      labelNames: ['method', 'route', 'status'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers,
    }),
    merges: new client.Counter({
      name: 'svc_cr_merges_total',
      help: 'Change-request merges by outcome',
      labelNames: ['outcome'],
      registers,
    }),
  };
  // Merged once every metric of this registry exists: a merge copies what is registered then.
  return { registry: also.length > 0 ? client.Registry.merge([own, ...also]) : own, ...m };
}

/** What this module reads of Express's router (public fields of `router`'s Layer). */
interface LayerLike {
  route?: unknown;
  handle?: { stack?: LayerLike[] };
  match(path: string): false | { path: string; pattern: unknown };
}

const joinPattern = (prefix: string, part: unknown): string => {
  const p = typeof part === 'string' ? part : String(part);
  if (p === '/' || p === '') return prefix;
  return `${prefix}${p.startsWith('/') ? '' : '/'}${p}`;
};

/**
 * The registered pattern that led to `route`, mounts included (`/v1/projects/:projectId/…`):
 * the router's stacks walked again along the request's path, keeping each layer's pattern
 * instead of the path it matched. `req.baseUrl` holds the matched path, other tenants' ids
 * in it, so it never becomes a label.
 */
function patternOf(stack: LayerLike[], path: string, route: unknown, prefix: string, depth = 0): string | null {
  if (depth > 16) return null;
  for (const layer of stack) {
    let m: ReturnType<LayerLike['match']>;
    try {
      m = layer.match(path);
    } catch {
      continue;
    }
    if (!m) continue;
    if (layer.route) {
      if (layer.route === route) return joinPattern(prefix, m.pattern) || '/';
      continue;
    }
    const inner = layer.handle?.stack;
    if (!Array.isArray(inner)) continue;
    const rest = path.slice(m.path.length) || '/';
    const found = patternOf(inner, rest.startsWith('/') ? rest : `/${rest}`, route, joinPattern(prefix, m.pattern), depth + 1);
    if (found) return found;
  }
  return null;
}

/** The `route` label of a finished request: a registered route pattern, or `unmatched`. */
export function routeLabel(req: Request): string {
  const route = req.route as unknown;
  const stack = (req.app as Express & { router?: { stack?: LayerLike[] } }).router?.stack;
  if (!route || !Array.isArray(stack)) return 'unmatched';
  const path = (req.originalUrl ?? req.url).split('?')[0] ?? '/';
  return patternOf(stack, path, route, '') || 'unmatched';
}

/** Records each request under its route pattern (never the raw URL: ids would leak and explode the labels). */
export function metricsMiddleware(m: Metrics): RequestHandler {
  return (req, res, next) => {
    const end = m.httpDuration.startTimer();
    res.on('finish', () => {
      let route = 'unmatched';
      try {
        route = routeLabel(req);
      } catch {
        route = 'unmatched';
      }
      end({ method: req.method, route, status: String(res.statusCode) });
    });
    next();
  };
}

const digest = (s: string) => createHash('sha256').update(s).digest();

/**
 * `GET /metrics` on the API's own listener: never through a sandbox's gateway (404, as if
 * it did not exist), and on the public listener only with `SVC_METRICS_TOKEN` as a Bearer
 * token (401 otherwise, also when none is set: the metrics are then on SVC_METRICS_ADDR only).
 */
export function publicMetricsHandler(m: Metrics, token: string | undefined): RequestHandler {
  const want = token ? digest(token) : null;
  return async (req, res) => {
    if (gatewayOf(req)) {
      res.status(404).json({ error: 'Not found', message: `No route for ${req.method} ${req.path}.` });
      return;
    }
    const header = req.headers.authorization;
    const got = typeof header === 'string' ? /^Bearer ([^\s]+)$/i.exec(header.trim())?.[1] : undefined;
    // Digests of equal length: the comparison takes the same time whatever was sent.
    if (!want || !got || !timingSafeEqual(digest(got), want)) {
      res.set('WWW-Authenticate', 'Bearer realm="metrics"').status(401).json({
        error: 'Unauthorized',
        message: 'The metrics need SVC_METRICS_TOKEN as a Bearer token here, or are read on the SVC_METRICS_ADDR listener.',
      });
      return;
    }
    res.set('Cache-Control', 'no-store').type(m.registry.contentType).send(await m.registry.metrics());
  };
}

/** The SVC_METRICS_ADDR listener's handler: `GET /metrics` and nothing else, no credential (bind it where only scrapers reach). */
export function metricsListenerHandler(m: Metrics) {
  return (req: import('node:http').IncomingMessage, res: import('node:http').ServerResponse): void => {
    const path = (req.url ?? '/').split('?')[0];
    if ((req.method !== 'GET' && req.method !== 'HEAD') || path !== '/metrics') {
      res.writeHead(404, { 'content-type': 'application/json; charset=utf-8', connection: 'close' }).end(JSON.stringify({ error: 'Not found', message: 'This listener serves GET /metrics only.' }));
      return;
    }
    m.registry.metrics().then(
      (text) => res.writeHead(200, { 'content-type': m.registry.contentType, 'cache-control': 'no-store' }).end(req.method === 'HEAD' ? undefined : text),
      () => res.writeHead(500).end(),
    );
  };
}

/** Every route pattern registered on `app`, mounts included (what a `route` label may be, besides `unmatched`). */
export function registeredRoutePatterns(app: Express): Set<string> {
  const out = new Set<string>();
  const walk = (stack: Array<LayerLike & { rawPath?: unknown }>, prefix: string, depth: number) => {
    if (depth > 16) return;
    for (const layer of stack) {
      const raws = Array.isArray(layer.rawPath) ? layer.rawPath : [layer.rawPath ?? '/'];
      for (const raw of raws) {
        if (layer.route) out.add(joinPattern(prefix, raw) || '/');
        else if (Array.isArray(layer.handle?.stack)) walk(layer.handle.stack, joinPattern(prefix, raw), depth + 1);
      }
    }
  };
  walk(((app as Express & { router?: { stack?: LayerLike[] } }).router?.stack ?? []) as Array<LayerLike & { rawPath?: unknown }>, '', 0);
  return out;
}
