import type { ChecksDeps } from '../services/checks/deps.js';
import { refreshAll } from '../services/checks/refresher.js';
import { supervise, type RunningJob, type WorkerMetrics } from './supervisor.js';

/**
 * Open CRs with checks follow their branch tips (services/checks/refresher.ts) every
 * `everyMs`. Every worker runs it: each append is decided on the stream at its version.
 */
export function startChecksRefresher(deps: ChecksDeps, everyMs: number, metrics?: WorkerMetrics): RunningJob {
  return supervise({ name: 'checks-refresher', everyMs, runAtStart: false, pass: () => refreshAll(deps) }, { logger: deps.logger, metrics });
}
