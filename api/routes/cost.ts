import { Router, type Request } from 'express';
import type { ApiDeps } from '../deps.js';
import { resolveProject } from '../project-access.js';

/** `/v1/projects/:projectId/change-requests/:crId/cost`: what the CR cost (docs/models.md "Cost"); its own JSON stays the spec's. */
export function costRoutes(deps: ApiDeps): Router {
  const r = Router({ mergeParams: true });
  const crRef = (req: Request) => String(req.params.crId ?? '');
  r.get('/', async (req, res) => {
    const project = await resolveProject(deps, req);
    res.json({ cost: await deps.services.changeRequests.cost(project, crRef(req)) });
  });
  return r;
}
