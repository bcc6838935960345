import type { QueueDeps } from '../services/merge-queue/deps.js';
import { sweepQueues } from '../services/merge-queue/sweep.js';
import { supervise, type RunningJob, type WorkerMetrics } from './supervisor.js';

/**
 * Every queue with something to do takes a step every `everyMs` (services/merge-queue/sweep.ts):
 * what no job asked for is found here (a base moved outside svc, a head an agent pushed, a
 * step whose worker died, a check lost with its worker). Every worker runs it: a step holds
 * the queue's lock and decides on the log, so two never act on one queue at once.
 */
export function startMergeQueueSweeper(deps: QueueDeps, everyMs: number, metrics?: WorkerMetrics): RunningJob {
  return supervise({ name: 'merge-queue-sweeper', everyMs, runAtStart: true, pass: async () => void (await sweepQueues(deps)) }, { logger: deps.logger, metrics });
}
