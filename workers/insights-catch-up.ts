import type { Db } from '../infra/db/db.js';
import type { Logger } from '../lib/logger.js';
import { keepInsightsCurrent } from '../services/insights/service.js';
import { supervise, type RunningJob, type WorkerMetrics } from './supervisor.js';

/**
 * The insights projection follows the log (docs/insights.md) every 15 s, so a read finds
 * little to catch up and a long log is projected in the background after an upgrade. Every
 * worker runs it: a catch-up takes its own lock per page, so two never write the same page.
 */
const EVERY_MS = 15_000;

export function startInsightsCatchUp(deps: { db: Db; logger: Logger; metrics?: WorkerMetrics | undefined }): RunningJob {
  return supervise({ name: 'insights-catch-up', everyMs: EVERY_MS, pass: async () => void (await keepInsightsCurrent(deps.db)) }, { logger: deps.logger, metrics: deps.metrics });
}
