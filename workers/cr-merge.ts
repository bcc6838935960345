import { z } from 'zod';
import { isDomainError } from '../domain/errors.js';
import { MergeOutcomeUnknown, runMerge, type MergeContext } from '../services/change-requests/merge.js';
import type { CrDeps } from '../services/change-requests/service.js';
import type { JobOutput } from '../infra/queue.js';

const jobSchema = z.object({
  project_id: z.uuid(),
  cr_id: z.uuid(),
  actor: z.uuid(),
  message: z.string().optional(),
  expected_head_sha: z.string().optional(),
  expected_base_sha: z.string().optional(),
});

/**
 * `cr.merge`: typed outcomes (409 conflicts, a moved head, a CR no longer open) are
 * results handed back to the waiting request; anything else throws: the job is failed and
 * pg-boss retries it (up to its retry limit), which `runMerge`'s recorded merge attempt
 * makes safe, and the waiting request gets the outcome of the retry. Run by the process
 * that took the request (`Queue.run`), the handler also gets the project and CR that
 * process read (`MergeContext`); a job fetched from the queue carries only ids.
 */
export function crMergeHandler(deps: CrDeps) {
  return async (data: unknown, meta?: { local?: unknown }): Promise<JobOutput> => {
    const job = jobSchema.parse(data);
    try {
      // Run in the process that took the request: the project and CR it read come along.
      const cr = await runMerge(deps, job, meta?.local as MergeContext | undefined);
      return { ok: true, value: cr };
    } catch (err) {
      // Unknown outcome: a retry settles it (found published and recorded, or merged anew).
      if (err instanceof MergeOutcomeUnknown) throw err;
      if (isDomainError(err)) {
        return { ok: false, error: { code: err.code, reason: err.reason, message: err.message, details: err.details } };
      }
      throw err;
    }
  };
}
