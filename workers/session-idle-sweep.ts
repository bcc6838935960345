import type { Queue } from '../infra/queue.js';
import { idleMs, type SessionDeps } from '../services/sessions/deps.js';
import { SESSION_IDLE_SWEEP } from '../services/sessions/jobs.js';
import { supervise, type RunningJob, type WorkerMetrics } from './supervisor.js';

/**
 * Schedules `session.idle-sweep` (its handler: ./sessions.ts) every quarter of the idle
 * timeout (1 s to 1 min). Every worker enqueues it; pg-boss's singleton key lets one run
 * per period, so no leader is needed.
 */
export function startSessionIdleSweep(deps: SessionDeps, queue: Queue, metrics?: WorkerMetrics): RunningJob {
  const periodMs = Math.max(1000, Math.min(60_000, idleMs(deps.config) / 4));
  return supervise(
    {
      name: 'session-idle-sweep',
      everyMs: periodMs,
      runAtStart: false,
      pass: async () => {
        await queue.enqueue(SESSION_IDLE_SWEEP, {}, { singleton: { key: 'sweep', seconds: Math.max(1, Math.floor(periodMs / 1000)) }, retryLimit: 0 });
      },
    },
    { logger: deps.logger, metrics },
  );
}
