import { Router } from 'express';
import type { ApiDeps } from '../deps.js';
import { resolveProject } from '../project-access.js';
import { notFound } from '../../domain/errors.js';
import { SLUG } from '../../domain/manifest/schema.js';
import { appQueries, type AppRow } from '../../sql/queries/apps.js';
import { serializeApp } from '../../infra/apps/deploy.js';

/** `/v1/projects/:projectId/apps` (read-only: apps follow `[[apps]]` on the default branch). */
export function appRoutes(deps: ApiDeps): Router {
  const r = Router({ mergeParams: true });
  r.get('/', async (req, res) => {
    const project = await resolveProject(deps.db, req);
    const rows = await deps.db.rows<AppRow>(appQueries.list(project.project_id));
    res.json({ apps: rows.map(serializeApp) });
  });
  r.get('/:name', async (req, res) => {
    const project = await resolveProject(deps.db, req);
    const name = String(req.params.name ?? '');
    const app = SLUG.test(name) ? await deps.db.one<AppRow>(appQueries.get(project.project_id, name)) : undefined;
    if (!app) throw notFound('App');
    const deploys = await deps.db.rows<Record<string, unknown>>(appQueries.deploys(project.project_id, app.name, 10));
    res.json({ app: { ...serializeApp(app), deploys } });
  });
  return r;
}
