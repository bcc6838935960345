import { Router, type Request } from 'express';
import { appOrigin } from '../../services/apps/origin.js';

import type { ApiDeps } from '../deps.js';
import { resolveProject } from '../project-access.js';
import { notFound } from '../../domain/errors.js';
import type { AppRow } from '../../services/apps/service.js';
import { serializeApp } from '../../services/apps/deploy.js';

/** `/v1/projects/:projectId/apps` (read-only: apps follow `[[apps]]` on the default branch). */
export function appRoutes(deps: ApiDeps): Router {
  const r = Router({ mergeParams: true });
  // The app's own origin as this server serves it (services/apps/origin.ts).
  const urlOf = (req: Request, a: AppRow) => `${appOrigin(deps.settings, a.name, a.project_id, req.socket.localPort ?? 0)}/`;
  r.get('/', async (req, res) => {
    const project = await resolveProject(deps, req);
    const rows = await deps.services.apps.list(project.project_id);
    res.json({ apps: rows.map((a) => serializeApp(a, urlOf(req, a))) });
  });
  r.get('/:name', async (req, res) => {
    const project = await resolveProject(deps, req);
    const name = String(req.params.name ?? '');
    const found = await deps.services.apps.get(project.project_id, name, 10);
    if (!found) throw notFound('App');
    res.json({ app: { ...serializeApp(found.app, urlOf(req, found.app)), deploys: found.deploys } });
  });
  return r;
}
