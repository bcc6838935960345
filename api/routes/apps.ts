import { Router } from 'express';
import type { ApiDeps } from '../deps.js';
import { resolveProject } from '../project-access.js';
import { notFound } from '../../domain/errors.js';
import { getAppWithDeploys, listApps } from '../../services/apps/service.js';
import { serializeApp } from '../../services/apps/deploy.js';

/** `/v1/projects/:projectId/apps` (read-only: apps follow `[[apps]]` on the default branch). */
export function appRoutes(deps: ApiDeps): Router {
  const r = Router({ mergeParams: true });
  r.get('/', async (req, res) => {
    const project = await resolveProject(deps.db, req);
    const rows = await listApps(deps.db, project.project_id);
    res.json({ apps: rows.map(serializeApp) });
  });
  r.get('/:name', async (req, res) => {
    const project = await resolveProject(deps.db, req);
    const name = String(req.params.name ?? '');
    const found = await getAppWithDeploys(deps.db, project.project_id, name, 10);
    if (!found) throw notFound('App');
    res.json({ app: { ...serializeApp(found.app), deploys: found.deploys } });
  });
  return r;
}
