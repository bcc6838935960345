import { startInsightsCatchUp } from '../../workers/insights-catch-up.js';
import type { Core, Running } from './core.js';

/** The insights projection's catch-up (workers/insights-catch-up.ts), with the workers. */
export function wireInsights(core: Core): Running {
  const { logger, db, roles } = core;
  if (!roles.worker) return {};
  return startInsightsCatchUp({ db, logger: logger.child({ component: 'insights' }), metrics: core.workerMetrics });
}
