import { Router } from 'express';
import type { ApiDeps } from '../deps.js';
import { publicMetricsHandler } from '../metrics.js';

/**
 * `/healthz` (process up), `/readyz` (database and queue reachable), `/metrics` (with
 * SVC_METRICS_TOKEN only, never through a sandbox's gateway: api/metrics.ts).
 */
export function healthRoutes(deps: ApiDeps): Router {
  const r = Router();
  r.get('/healthz', (_req, res) => {
    res.json({ status: 'ok' });
  });
  r.get('/readyz', async (_req, res) => {
    const checks: Record<string, string> = {};
    try {
      await deps.services.health.databaseReady();
      checks.database = 'ok';
    } catch {
      checks.database = 'unreachable';
    }
    try {
      await deps.services.health.queueReady();
      checks.queue = 'ok';
    } catch {
      checks.queue = 'unreachable';
    }
    const ready = Object.values(checks).every((v) => v === 'ok');
    res.status(ready ? 200 : 503).json({ status: ready ? 'ready' : 'not ready', checks });
  });
  r.get('/metrics', publicMetricsHandler(deps.metrics, deps.settings.SVC_METRICS_TOKEN));
  return r;
}
