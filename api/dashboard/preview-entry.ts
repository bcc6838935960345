import { Router } from 'express';
import { z } from 'zod';
import { APP_GRANT_PORT, appGrantId, PREVIEW_AUTH_PATH } from '../../services/previews/grants.js';
import { appOrigin } from '../../services/apps/origin.js';
import { notFound } from '../../domain/errors.js';
import { previewOrigin } from '../../services/previews/origin.js';
import type { ApiDeps } from '../deps.js';
import { sessionsOf } from '../routes/sessions.js';
import { callerOf, ownOrigin, projectOf } from './context.js';

const Params = z.object({ port: z.string().regex(/^[1-9][0-9]{0,4}$/).transform(Number).pipe(z.number().max(65535)) });
/** Where to land on the preview: a path of that origin (never `//host` or a scheme). */
const Query = z.object({ path: z.string().max(4096).regex(/^\/(?![/\\])[^\s]*$/).default('/') });

/**
 * The one way into a preview (docs/sessions.md "Previews"): `/projects/:p/sessions/:s/preview/:port`
 * checks that the signed-in user may see the session, mints a one-time code bound to
 * (user, session, port) and the dashboard origin that may frame it, and sends the browser
 * to the preview's own origin, which trades the code for a cookie of its own.
 */
export function previewEntry(deps: ApiDeps): Router {
  const r = Router();
  r.get('/projects/:projectId/sessions/:sessionId/preview/:port', async (req, res) => {
    const { port } = Params.parse(req.params);
    const { path } = Query.parse(req.query);
    const project = await projectOf(deps, req, res);
    const s = await sessionsOf(deps).find(project.project_id, String(req.params.sessionId));
    const frameOrigin = deps.settings.SVC_PUBLIC_URL ? new URL(deps.settings.SVC_PUBLIC_URL).origin : ownOrigin(req);
    const code = await deps.services.previews.mintCode({ user_id: callerOf(res).user_id, project_id: project.project_id, session_id: s.session_id, port, frame_origin: frameOrigin, path });
    const to = `${previewOrigin(deps.settings, s.session_id, port, req.socket.localPort ?? 0)}${PREVIEW_AUTH_PATH}?${new URLSearchParams({ code })}`;
    res.set({ 'cache-control': 'no-store', 'referrer-policy': 'no-referrer' }).redirect(303, to);
  });
  /** The same way into a members-only app (docs/manifest.md "Apps"): the app's origin sends browsers here. */
  r.get('/projects/:projectId/apps/:name/open', async (req, res) => {
    const { path } = Query.parse(req.query);
    const project = await projectOf(deps, req, res);
    const found = await deps.services.apps.get(project.project_id, String(req.params.name), 0);
    if (!found || found.app.removed || !found.app.target) throw notFound('App');
    const { app } = found;
    const frameOrigin = deps.settings.SVC_PUBLIC_URL ? new URL(deps.settings.SVC_PUBLIC_URL).origin : ownOrigin(req);
    const code = await deps.services.previews.mintCode({ user_id: callerOf(res).user_id, project_id: project.project_id, session_id: appGrantId(app.name), port: APP_GRANT_PORT, frame_origin: frameOrigin, path });
    const to = `${appOrigin(deps.settings, app.name, app.project_id, req.socket.localPort ?? 0)}${PREVIEW_AUTH_PATH}?${new URLSearchParams({ code })}`;
    res.set({ 'cache-control': 'no-store', 'referrer-policy': 'no-referrer' }).redirect(303, to);
  });
  return r;
}
