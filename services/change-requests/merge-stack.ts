import { DomainError } from '../../domain/errors.js';
import type { ChangeRequest } from '../../domain/change-request/index.js';
import type { ProjectRecord } from '../../domain/project.js';
import type { Queue } from '../../infra/queue.js';
import { requestMerge } from './request-merge.js';
import { findCr, refreshCr, type CrDeps } from './service.js';
import { crStack, settleAfterMerge } from './stack.js';

/**
 * `POST …/merge {"stack": true}`: the CR and every open ancestor, bottom-up, each step a
 * merge through the one merge path (a `cr.merge` job: compare-and-swap on the base, bound
 * to the head read when the request began). Each merge retargets the next CR onto the
 * base it merged into (settleAfterMerge), so every step lands on the stack's base. A step
 * that fails stops the walk: the CRs below it stay merged, the rest stay open.
 */
export async function mergeStack(
  deps: CrDeps & { queue: Queue; onConflict?: () => void },
  project: ProjectRecord,
  ref: string,
  actor: string,
  body: { expected_head_sha?: string | undefined; message?: string | undefined },
): Promise<ChangeRequest> {
  const { stack, cr } = await crStack(deps, project, ref);
  if (cr.status !== 'open') return requestMerge(deps, project, cr.cr_id, actor, body); // the decider's 409
  const at = stack.findIndex((e) => e.cr.cr_id === cr.cr_id);
  const steps = stack.slice(0, at + 1).map((e) => e.cr);
  // Anything but open below it (a parent closed unmerged: its children wait for a person) stops the walk before it starts.
  const blocked = steps.find((c) => c.status !== 'open');
  if (blocked) {
    throw new DomainError('conflict', 'Conflict', `Change request #${blocked.number} below #${cr.number} in its stack is ${blocked.status}: retarget #${cr.number}'s stack or reopen #${blocked.number}, then merge again.`, { status: blocked.status });
  }
  // Bound to the heads as they are now: a push during the walk stops it at that CR.
  const heads = await Promise.all(steps.map(async (c) => (await refreshCr(deps, project, c, actor)).head_commit_sha));
  let last = cr;
  for (const [i, step] of steps.entries()) {
    const top = i === steps.length - 1;
    const expected = top && body.expected_head_sha !== undefined ? body.expected_head_sha : heads[i];
    last = await requestMerge(deps, project, step.cr_id, actor, {
      ...(expected ? { expected_head_sha: expected } : {}),
      ...(top && body.message !== undefined ? { message: body.message } : {}),
    });
    if (!top) {
      // The next CR now bases on what this one merged into (settled by the merge itself;
      // settled here too if that process died before).
      const next = await findCr(deps.db, project.project_id, steps[i + 1]!.cr_id);
      if (next.status === 'open' && next.base_ref === last.head_ref) await settleAfterMerge(deps, project, last);
    }
  }
  return last;
}

