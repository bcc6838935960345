import { isDomainError } from '../../domain/errors.js';
import { mergeQueueQueries as mq } from '../../sql/queries/merge-queue.js';
import type { QueueDeps } from './deps.js';
import { stepQueue } from './step.js';

/** One pass of the sweeper: a step of every queue with CRs waiting or work under way. A queue another step holds is left to it. */
export async function sweepQueues(deps: QueueDeps): Promise<number> {
  const queues = await deps.db.rows<{ project_id: string; base_ref: string }>(mq.active());
  let stepped = 0;
  for (const q of queues) {
    try {
      await stepQueue({ ...deps, lockWaitMs: 0 }, q.project_id, q.base_ref, { sweep: true });
      stepped++;
    } catch (err) {
      if (isDomainError(err) && err.reason === 'Merge in progress') continue; // another step has it
      deps.logger.warn({ project_id: q.project_id, base_ref: q.base_ref, err: (err as Error).message }, 'merge queue step failed; the next pass tries again');
    }
  }
  return stepped;
}
