import { Router } from 'express';
import { z } from 'zod';
import { previewOrigin } from '../../services/previews/origin.js';
import type { ApiDeps } from '../deps.js';
import { resolveProject } from '../project-access.js';
import { sessionsOf } from './sessions.js';

const Query = z.object({ port: z.string().regex(/^[1-9][0-9]{0,4}$/, 'a port from 1 to 65535').transform(Number).pipe(z.number().max(65535)).default(3000) }).strict();

/**
 * `GET /v1/projects/:projectId/sessions/:sessionId/preview-url?port=3000` ->
 * `{"url": "http://p3000-<id>.localhost:8080/"}`: where a browser opens a sandbox port
 * (`svc sessions preview`). Opening it sends the browser through the dashboard for access.
 */
export function previewUrlRoutes(deps: ApiDeps): Router {
  const r = Router({ mergeParams: true });
  r.get('/', async (req, res) => {
    const { port } = Query.parse(req.query);
    const project = await resolveProject(deps, req);
    const s = await sessionsOf(deps).find(project.project_id, String((req.params as Record<string, string>).sessionId ?? ''));
    res.json({ url: `${previewOrigin(deps.settings, s.session_id, port, req.socket.localPort ?? 0)}/`, port });
  });
  return r;
}
