import { Router } from 'express';
import type { ApiDeps } from '../deps.js';
import { resolveProject } from '../project-access.js';
import { EmptyBody } from '../../contracts/common.js';
import { sessionsOf } from './sessions.js';

/**
 * `POST /v1/projects/:projectId/sessions/:sessionId/refresh`: the daemon's `/svc/refresh`
 * (services/sessions/refresh.ts). 202 once the daemon accepted it.
 */
export function sessionRefreshRoutes(deps: ApiDeps): Router {
  const r = Router({ mergeParams: true });
  r.post('/', async (req, res) => {
    const project = await resolveProject(deps, req);
    EmptyBody.parse(req.body ?? {});
    const session = await sessionsOf(deps).refresh(project.project_id, String((req.params as Record<string, string>).sessionId ?? ''));
    res.status(202).json({ session });
  });
  return r;
}
