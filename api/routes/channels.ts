import { Router } from 'express';
import type { ApiDeps } from '../deps.js';
import { outboundPolicy } from '../../infra/net/outbound-policy.js';
import { principalOf } from '../auth.js';
import { resolveProject } from '../project-access.js';
import { AddChannelBody } from '../../contracts/channels.js';
import { addChannel, listChannels, removeChannel } from '../../services/channels/service.js';

/**
 * `/v1/projects/:projectId/channels`: chat channels of a project (`svc channels`).
 * `POST {"kind":"slack","webhook_url"}` -> 201 `{"channel"}`; `GET` -> `{"channels"}`;
 * `DELETE /:channelId` -> 204. The webhook URL is write-only (shown as its origin).
 */
export function channelRoutes(deps: ApiDeps): Router {
  const r = Router({ mergeParams: true });
  const allowHttp = deps.config.SVC_CHANNELS_ALLOW_HTTP;

  r.get('/', async (req, res) => {
    const project = await resolveProject(deps.db, req);
    res.json({ channels: await listChannels(deps.db, project.project_id) });
  });

  r.post('/', async (req, res) => {
    const project = await resolveProject(deps.db, req);
    const body = AddChannelBody.parse(req.body ?? {});
    const channel = await addChannel({ db: deps.db, secrets: deps.secrets, allowHttp, policy: outboundPolicy(deps.config) }, project.project_id, principalOf(req).user_id, body);
    res.status(201).json({ channel });
  });

  r.delete('/:channelId', async (req, res) => {
    const project = await resolveProject(deps.db, req);
    await removeChannel(deps.db, project.project_id, String(req.params.channelId));
    res.status(204).end();
  });

  return r;
}
