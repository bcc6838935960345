import type { ProjectRecord } from '../../domain/project.js';
import type { CheckRunJob, ChecksDeps } from '../checks/deps.js';

/** The queue's driver job: one step of one (project, base branch) queue. */
export const MQ_STEP = 'merge-queue.step';
export const MQ_QUEUES = [MQ_STEP];

export interface QueueStepJob {
  project_id: string;
  base_ref: string;
}

export interface QueueDeps extends ChecksDeps {
  /** Has a worker take a step of the queue soon (`merge-queue.step`). */
  enqueueStep: (job: QueueStepJob) => Promise<void>;
  /** A run queued a while ago with no worker on it: queued again (at most once per few seconds per run). */
  requeueRun?: (job: CheckRunJob) => Promise<void>;
  /** A conflict to send to the CR's agent (`[review] send_failures_to_agent`), once the CRs ahead of it landed. */
  onConflict?: ((project: ProjectRecord, crId: string) => Promise<unknown>) | undefined;
}
