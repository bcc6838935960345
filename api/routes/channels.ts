import { Router } from 'express';
import type { ApiDeps } from '../deps.js';
import { principalOf } from '../auth.js';
import { resolveProject } from '../project-access.js';
import { AddChannelBody } from '../../contracts/channels.js';

/**
 * `/v1/projects/:projectId/channels`: chat channels of a project (`svc channels`).
 * `POST {"kind":"slack","webhook_url"}` -> 201 `{"channel"}`; `GET` -> `{"channels"}`;
 * `DELETE /:channelId` -> 204. The webhook URL is write-only (shown as its origin).
 */
export function channelRoutes(deps: ApiDeps): Router {
  const r = Router({ mergeParams: true });

  r.get('/', async (req, res) => {
    const project = await resolveProject(deps, req);
    res.json({ channels: await deps.services.channels.list(project.project_id) });
  });

  r.post('/', async (req, res) => {
    const project = await resolveProject(deps, req);
    const body = AddChannelBody.parse(req.body ?? {});
    const channel = await deps.services.channels.add(project.project_id, principalOf(req).user_id, body);
    res.status(201).json({ channel });
  });

  r.delete('/:channelId', async (req, res) => {
    const project = await resolveProject(deps, req);
    await deps.services.channels.remove(project.project_id, String(req.params.channelId));
    res.status(204).end();
  });

  return r;
}
