import { Router } from 'express';
import type { ApiDeps } from '../deps.js';
import { principalOf } from '../auth.js';
import { InsightsQuery, type Insights } from '../../contracts/insights.js';
import type { InsightsReport } from '../../services/insights/service.js';

/** The wire JSON of an insights report (the one place it is built). */
export function serializeInsights(r: InsightsReport): Insights {
  return {
    scope: r.scope,
    id: r.id,
    from: r.from.toISOString(),
    to: r.to.toISOString(),
    as_of: r.asOf.toISOString(),
    group_by: r.groupBy,
    groups: r.groups,
    total: r.total,
  };
}

/** `GET /v1/projects/:projectId/insights`: outcomes and cost of one project (docs/insights.md). */
export function projectInsightsRoutes(deps: ApiDeps): Router {
  const r = Router({ mergeParams: true });
  r.get('/', async (req, res) => {
    const q = InsightsQuery.parse(req.query);
    res.json(serializeInsights(await deps.services.insights.project(principalOf(req), String((req.params as Record<string, string>).projectId ?? ''), q, req.loadedProject)));
  });
  return r;
}

/** `GET /v1/accounts/:accountId/insights`: the same over every project of an account its member asks about. */
export function accountInsightsRoutes(deps: ApiDeps): Router {
  const r = Router({ mergeParams: true });
  r.get('/', async (req, res) => {
    const q = InsightsQuery.parse(req.query);
    res.json(serializeInsights(await deps.services.insights.account(principalOf(req), String((req.params as Record<string, string>).accountId ?? ''), q)));
  });
  return r;
}
