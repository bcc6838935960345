import { sandboxFetch } from '../../lib/sandbox-dial.js';
import { Router } from 'express';
import { DomainError } from '../../domain/errors.js';
import type { ApiDeps } from '../deps.js';
import { resolveProject } from '../project-access.js';
import { EmptyBody } from '../schemas.js';
import { liveTarget } from '../../services/sessions/service.js';
import { sessionDepsOf } from './sessions.js';

/**
 * `POST /v1/projects/:projectId/sessions/:sessionId/refresh`: the daemon's `/svc/refresh`
 * (re-pull the session branch, restart the runtime in place), called by the server with
 * the sandbox's key, which never leaves it. 202 once the daemon accepted it.
 */
export function sessionRefreshRoutes(deps: ApiDeps): Router {
  const r = Router({ mergeParams: true });
  r.post('/', async (req, res) => {
    const project = await resolveProject(deps.db, req);
    EmptyBody.parse(req.body ?? {});
    const t = await liveTarget(sessionDepsOf(deps), project.project_id, String((req.params as Record<string, string>).sessionId ?? ''));
    let status: number;
    try {
      const up = await sandboxFetch(t.url, '/svc/refresh', { method: 'POST', headers: { authorization: `Bearer ${t.key}`, 'content-type': 'application/json' }, body: '{}', signal: AbortSignal.timeout(30_000) });
      status = up.status;
      await up.arrayBuffer();
    } catch (err) {
      throw new DomainError('unavailable', 'Sandbox unavailable', `The sandbox did not answer: ${(err as Error).message}`);
    }
    if (status >= 400) throw new DomainError(status === 409 ? 'conflict' : 'unavailable', 'Refresh refused', `The sandbox answered ${status}.`);
    res.status(202).json({ session: t.session });
  });
  return r;
}
