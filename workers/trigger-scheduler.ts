import { fireDueTriggers } from '../services/triggers/scheduler.js';
import type { TriggerDeps } from '../services/triggers/service.js';
import { supervise, type RunningJob, type WorkerMetrics } from './supervisor.js';

/**
 * Scheduled triggers (services/triggers/scheduler.ts) every `everyMs`, from start. Every
 * worker runs it: a tick is fired by the one process whose claim of it succeeds.
 */
export function startTriggerScheduler(deps: TriggerDeps, everyMs: number, metrics?: WorkerMetrics): RunningJob {
  return supervise({ name: 'trigger-scheduler', everyMs, pass: async () => void (await fireDueTriggers(deps)) }, { logger: deps.logger, metrics });
}
