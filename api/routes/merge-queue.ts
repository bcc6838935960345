import { Router, type Request } from 'express';
import type { ApiDeps } from '../deps.js';
import { principalOf } from '../auth.js';
import { resolveProject } from '../project-access.js';
import { EmptyBody } from '../../contracts/common.js';
import { MergeQueueQuery } from '../../contracts/merge-queue.js';
import { MQ_STEP, type QueueDeps } from '../../services/merge-queue/deps.js';
import { dequeueByPerson } from '../../services/merge-queue/enqueue.js';
import { queueView } from '../../services/merge-queue/view.js';
import { serializeCrQueue } from '../../services/checks/view.js';
import { assertMay } from '../../services/tokens/agent-policy.js';
import { checksDepsOf } from './checks.js';

/** The merge queue's service from the API's deps: its steps go to the workers. */
export function queueDepsOf(deps: ApiDeps): QueueDeps {
  return { ...checksDepsOf(deps), enqueueStep: async (job) => void (await deps.queue.enqueue(MQ_STEP, job)) };
}

/** `/v1/projects/:projectId/merge-queue`: a base branch's queue; a person takes a CR out of it. */
export function mergeQueueRoutes(deps: ApiDeps): Router {
  const r = Router({ mergeParams: true });

  r.get('/', async (req, res) => {
    const project = await resolveProject(deps.db, req);
    const q = MergeQueueQuery.parse(req.query);
    res.json({ merge_queue: await queueView(deps.db, project, q.base) });
  });

  r.delete('/:crId', async (req: Request, res) => {
    assertMay(principalOf(req), { kind: 'cr.merge' }); // what merges is a person's decision, never a sandbox's credential
    const project = await resolveProject(deps.db, req);
    EmptyBody.parse(req.body ?? {});
    const entry = await dequeueByPerson(queueDepsOf(deps), project, String(req.params.crId ?? ''), principalOf(req).user_id);
    res.json({ merge_queue: serializeCrQueue(entry) });
  });

  return r;
}
