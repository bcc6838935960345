import { Router, type Request } from 'express';
import { DomainError, isDomainError } from '../../domain/errors.js';
import { isBudgetRefusal } from '../../domain/budget/budget.js';
import type { ApiDeps } from '../deps.js';
import { principalOf } from '../auth.js';
import { resolveProject } from '../project-access.js';
import { AbortSessionBody, CreateSessionBody, RestartSessionBody, ListSessionsQuery, PromptSessionBody } from '../../contracts/sessions.js';
import type { SessionServices } from '../../services/api-services/sessions.js';

export const sessionsUnavailable = () =>
  new DomainError('unavailable', 'Sessions unavailable', 'This server runs no session service.');

/** The session service, as the wiring built it once (absent: 503). */
export function sessionsOf(deps: Pick<ApiDeps, 'services'>): SessionServices {
  if (!deps.services.sessions) throw sessionsUnavailable();
  return deps.services.sessions;
}

/** `/v1/projects/:projectId/sessions` (contracts.md "Sessions"): write access to the project. */
export function sessionRoutes(deps: ApiDeps): Router {
  const r = Router({ mergeParams: true });
  const ctx = async (req: Request) => ({
    project: await resolveProject(deps, req),
    actor: principalOf(req).user_id,
    s: sessionsOf(deps),
    id: String(req.params.sessionId ?? ''),
  });

  r.get('/', async (req, res) => {
    const { project, s } = await ctx(req);
    const q = ListSessionsQuery.parse(req.query);
    res.json({ sessions: await s.list(project.project_id, q.status === 'all' ? null : q.status) });
  });

  r.post('/', async (req, res) => {
    const { project, actor, s } = await ctx(req);
    const body = CreateSessionBody.parse(req.body ?? {});
    try {
      const session = await s.create({
        project,
        userId: actor,
        agent: body.agent,
        model: body.model,
        baseRef: body.base_ref,
        prompt: body.prompt,
        expectPrompt: body.expect_prompt === true,
      });
      res.status(201).json({ session });
    } catch (err) {
      if (isDomainError(err) && err.code === 'rate_limited' && !isBudgetRefusal(err)) res.set('Retry-After', '30'); // a spent budget waits for a person, not for time
      throw err;
    }
  });

  r.get('/:sessionId', async (req, res) => {
    const { project, s, id } = await ctx(req);
    res.json({ session: await s.detail(project.project_id, id) });
  });

  r.get('/:sessionId/events', async (req, res) => {
    const { project, s, id } = await ctx(req);
    res.json({ events: await s.history(project.project_id, id) });
  });

  r.post('/:sessionId/stop', async (req, res) => {
    const { project, actor, s, id } = await ctx(req);
    AbortSessionBody.parse(req.body ?? {});
    const found = await s.find(project.project_id, id);
    res.json({ session: await s.stop(project.project_id, found.session_id, actor) });
  });

  r.post('/:sessionId/restart', async (req, res) => {
    const { project, actor, s, id } = await ctx(req);
    const body = RestartSessionBody.parse(req.body ?? {});
    const found = await s.find(project.project_id, id);
    try {
      res.json({ session: await s.restart(project.project_id, found.session_id, actor, { fresh: body.fresh === true }) });
    } catch (err) {
      if (isDomainError(err) && err.code === 'rate_limited' && !isBudgetRefusal(err)) res.set('Retry-After', '30'); // a spent budget waits for a person, not for time
      throw err;
    }
  });

  r.delete('/:sessionId', async (req, res) => {
    const { project, actor, s, id } = await ctx(req);
    const found = await s.find(project.project_id, id);
    await s.remove(project.project_id, found.session_id, actor);
    res.status(204).end();
  });

  r.post('/:sessionId/prompt', async (req, res) => {
    const { project, s, id } = await ctx(req);
    const body = PromptSessionBody.parse(req.body ?? {});
    await s.assertPromptable(project, id);
    const out = await s.control(project.project_id, id, '/svc/prompt', { text: body.text, ...(body.session_id ? { session_id: body.session_id } : {}) });
    res.status(202).json(out ?? {});
  });

  r.post('/:sessionId/abort', async (req, res) => {
    const { project, s, id } = await ctx(req);
    AbortSessionBody.parse(req.body ?? {});
    const out = await s.control(project.project_id, id, '/svc/abort', {});
    res.json(out ?? {});
  });

  return r;
}
