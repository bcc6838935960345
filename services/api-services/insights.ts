import type { ServiceWiring } from './index.js';
import { accountInsights, projectInsights } from '../insights/service.js';
import { bind } from './bind.js';

/** Outcomes and cost (docs/insights.md): a project's, an account's. */
export function insightServices(w: ServiceWiring) {
  const deps = { db: w.db };
  return {
    project: bind(deps, projectInsights),
    account: bind(deps, accountInsights),
  };
}
