import type { ChecksDeps } from '../../services/checks/deps.js';
import { sendFailureAutomatically } from '../../services/checks/auto-send.js';
import { CHECK_RUN } from '../../services/checks/deps.js';
import { MQ_STEP, type QueueDeps } from '../../services/merge-queue/deps.js';
import { queueConflictFeedback } from '../../services/merge-queue/feedback.js';
import { takeRunLease } from '../../services/merge-queue/lease.js';
import { stepQueue } from '../../services/merge-queue/step.js';
import type { SessionDeps } from '../../services/sessions/deps.js';
import { startMergeQueueSweeper } from '../../workers/merge-queue-sweeper.js';
import { startMergeQueueWorkers } from '../../workers/merge-queue.js';
import type { Core, Running } from './core.js';

/** What the API is handed to ask a queue for a step. */
export function queueEnqueue(core: Core): Pick<QueueDeps, 'enqueueStep'> {
  return { enqueueStep: async (job) => void (await core.queue.enqueue(MQ_STEP, job)) };
}

/**
 * The merge queue, worker role, on the checks' deps (its runs are check runs): queue runs
 * hold a lease while they run and ask for a step when they end; the step worker and the
 * sweeper drive every queue; conflicts and failures go to agents as check failures do.
 */
export function wireMergeQueue(core: Core, checks: ChecksDeps, sessions: SessionDeps | undefined, everyMs: number): Running {
  const { queue, db } = core;
  const deps: QueueDeps = {
    ...checks,
    ...queueEnqueue(core),
    requeueRun: async (job) => void (await queue.enqueue(CHECK_RUN, job, { retryLimit: 0, singleton: { key: `requeue:${job.run_id}`, seconds: 5 } })),
    onConflict: sessions ? (project, crId) => sendFailureAutomatically(checks, sessions, project, crId, [queueConflictFeedback]) : undefined,
  };
  checks.leaseRun = (runId) => takeRunLease(db, runId);
  // The step a run's end asks for runs here at once (a job's pickup costs a hop between the
  // last check passing and the swap); if it fails, a job takes it, and the sweeper besides.
  checks.onQueueRunDone = async (project, baseRef) => {
    const job = { project_id: project.project_id, base_ref: baseRef };
    void stepQueue(deps, job.project_id, job.base_ref).catch(async (err: Error) => {
      core.logger.info({ ...job, err: err.message }, 'merge queue step handed to a job');
      await queue.enqueue(MQ_STEP, job).catch(() => undefined);
    });
  };
  startMergeQueueWorkers(deps, queue);
  const sweeper = startMergeQueueSweeper(deps, everyMs, core.workerMetrics);
  return { stop: () => sweeper.stop() };
}
