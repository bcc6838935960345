import { Router } from 'express';
import type { ApiDeps } from '../deps.js';
import { resolveProject } from '../project-access.js';
import { notFound } from '../../domain/errors.js';
import { appDeploys, getApp, listApps } from '../../services/apps/service.js';
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
    const app = await getApp(deps.db, project.project_id, name);
    if (!app) throw notFound('App');
    const deploys = await appDeploys(deps.db, project.project_id, app.name, 10);
    res.json({ app: { ...serializeApp(app), deploys } });
  });
  return r;
}
