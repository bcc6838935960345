import { z } from 'zod';
import type { JobOutput, Queue } from '../infra/queue.js';
import { CHECK_EVALUATE, CHECK_RUN, type ChecksDeps } from '../services/checks/deps.js';
import { runCheck } from '../services/checks/run.js';
import { evaluateById } from '../services/checks/schedule.js';

const runJob = z.object({ project_id: z.uuid(), cr_id: z.uuid(), run_id: z.uuid() });
const evaluateJob = z.object({ project_id: z.uuid(), cr_id: z.uuid() });

/**
 * `check.run` (SVC_CHECKS_CONCURRENCY at once per server: each is a sandbox) and
 * `check.evaluate` (merge-when-green asked through the API or a status post). A run whose
 * job is retried after a crash finds itself started and leaves it (the refresher's next
 * pair replaces it).
 */
export function startCheckWorkers(deps: ChecksDeps, queue: Queue, concurrency: number): void {
  queue.work(CHECK_RUN, concurrency, async (data): Promise<JobOutput> => {
    await runCheck(deps, runJob.parse(data));
    return { ok: true, value: null };
  });
  queue.work(CHECK_EVALUATE, 2, async (data): Promise<JobOutput> => {
    const job = evaluateJob.parse(data);
    return { ok: true, value: await evaluateById(deps, job.project_id, job.cr_id) };
  });
}
