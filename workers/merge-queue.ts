import { z } from 'zod';
import type { JobOutput, Queue } from '../infra/queue.js';
import { MQ_STEP, type QueueDeps } from '../services/merge-queue/deps.js';
import { stepQueue } from '../services/merge-queue/step.js';

const stepJob = z.object({ project_id: z.uuid(), base_ref: z.string().min(1).max(255) });

/**
 * `merge-queue.step`: one step of one queue (services/merge-queue/step.ts), asked for when a
 * CR enters or leaves and when one of the queue's check runs ends. A step is idempotent and
 * decides everything from the log and git, so a retried or duplicated job is harmless; a
 * failure throws and pg-boss retries it (the sweeper takes the queue up besides).
 */
export function startMergeQueueWorkers(deps: QueueDeps, queue: Queue): void {
  queue.work(MQ_STEP, 2, async (data): Promise<JobOutput> => {
    const job = stepJob.parse(data);
    return { ok: true, value: await stepQueue(deps, job.project_id, job.base_ref) };
  });
}
