import client from 'prom-client';
import type { RequestHandler } from 'express';

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

/** Records each request under its route pattern (never the raw URL: ids would explode the labels). */
export function metricsMiddleware(m: Metrics): RequestHandler {
  return (req, res, next) => {
    const end = m.httpDuration.startTimer();
    res.on('finish', () => {
      const route = req.route?.path ? `${req.baseUrl}${req.route.path}` : 'unmatched';
      end({ method: req.method, route, status: String(res.statusCode) });
    });
    next();
  };
}
