import client from 'prom-client';
import type { RequestHandler } from 'express';

export interface Metrics {
  registry: client.Registry;
  httpDuration: client.Histogram<'method' | 'route' | 'status'>;
  merges: client.Counter<'outcome'>;
}

export function createMetrics(): Metrics {
  const registry = new client.Registry();
  client.collectDefaultMetrics({ register: registry });
  return {
    registry,
    httpDuration: new client.Histogram({
      name: 'svc_http_request_duration_seconds',
      help: 'HTTP request duration by route',
      labelNames: ['method', 'route', 'status'],
      buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5],
      registers: [registry],
    }),
    merges: new client.Counter({
      name: 'svc_cr_merges_total',
      help: 'Change-request merges by outcome',
      labelNames: ['outcome'],
      registers: [registry],
    }),
  };
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
