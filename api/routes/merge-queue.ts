import { Router, type Request } from 'express';
import type { ApiDeps } from '../deps.js';
import { principalOf } from '../auth.js';
import { resolveProject } from '../project-access.js';
import { EmptyBody } from '../../contracts/common.js';
import { MergeQueueQuery } from '../../contracts/merge-queue.js';
import { serializeCrQueue } from '../../services/checks/view.js';
import { assertMay } from '../../services/tokens/agent-policy.js';

/** `/v1/projects/:projectId/merge-queue`: a base branch's queue; a person takes a CR out of it. */
export function mergeQueueRoutes(deps: ApiDeps): Router {
  const r = Router({ mergeParams: true });

  r.get('/', async (req, res) => {
    const project = await resolveProject(deps, req);
    const q = MergeQueueQuery.parse(req.query);
    res.json({ merge_queue: await deps.services.mergeQueue.view(project, q.base) });
  });

  r.delete('/:crId', async (req: Request, res) => {
    assertMay(principalOf(req), { kind: 'cr.merge' }); // what merges is a person's decision, never a sandbox's credential
    const project = await resolveProject(deps, req);
    EmptyBody.parse(req.body ?? {});
    const entry = await deps.services.mergeQueue.dequeue(project, String(req.params.crId ?? ''), principalOf(req).user_id);
    res.json({ merge_queue: serializeCrQueue(entry) });
  });

  return r;
}
