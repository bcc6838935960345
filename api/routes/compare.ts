import { Router } from 'express';
import type { ApiDeps } from '../deps.js';
import { resolveProject } from '../project-access.js';
import { CompareQuery } from '../../contracts/change-requests.js';

/**
 * `/v1/projects/:projectId/compare?base=&head=`: two live branches compared before a CR is
 * opened (GitHub's compare view, as the merge preview's shape): what `svc cr open` asks
 * before it opens, to refuse a head that adds nothing. A read: agent credentials may ask.
 */
export function compareRoutes(deps: ApiDeps): Router {
  const r = Router({ mergeParams: true });
  r.get('/', async (req, res) => {
    const project = await resolveProject(deps, req);
    const q = CompareQuery.parse(req.query);
    res.json(await deps.services.changeRequests.compare(project, q.head, q.base));
  });
  return r;
}
