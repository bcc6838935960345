import { Router, type Request } from 'express';
import type { ApiDeps } from '../deps.js';
import { principalOf } from '../auth.js';
import { resolveProject } from '../project-access.js';
import { EmptyBody } from '../../contracts/common.js';
import { serializeCr } from './change-requests.js';
import { DomainError } from '../../domain/errors.js';
import type { ProjectRecord } from '../../domain/project.js';
import { serializeTrigger } from '../../services/triggers/service.js';

/** Fires a trigger now (the route and the dashboard's Fire): the spawned session, or 503 saying why none was. */
export async function fireNow(deps: Pick<ApiDeps, 'services'>, project: ProjectRecord, slug: string, actor: string): Promise<Record<string, unknown>> {
  const out = await deps.services.triggers.fire(project, slug, actor);
  if (out.outcome === 'spawned') return out.session;
  if (out.outcome === 'budget exceeded') throw out.refusal;
  // Recorded, but no session: say so plainly rather than pretend.
  throw new DomainError('unavailable', out.outcome === 'sessions unavailable' ? 'Sessions unavailable' : 'Spawn failed', out.error, { outcome: out.outcome });
}

/** `/v1/projects/:projectId/triggers` */
export function triggerRoutes(deps: ApiDeps): Router {
  const r = Router({ mergeParams: true });
  const ctx = async (req: Request) => ({ project: await resolveProject(deps, req), actor: principalOf(req).user_id });
  const slug = (req: Request) => String(req.params.slug ?? '');

  r.get('/', async (req, res) => {
    const { project } = await ctx(req);
    const rows = await deps.services.triggers.list(project.project_id);
    res.json({ triggers: rows.map(serializeTrigger) });
  });

  r.get('/:slug', async (req, res) => {
    const { project } = await ctx(req);
    const t = await deps.services.triggers.get(project.project_id, slug(req));
    const fires = await deps.services.triggers.fires(project.project_id, t.slug, 20);
    res.json({ trigger: { ...serializeTrigger(t), fires: fires.map((f) => ({ ...f, tick: new Date(f.tick).toISOString(), fired_at: new Date(f.fired_at).toISOString() })) } });
  });

  r.post('/:slug/fire', async (req, res) => {
    const { project, actor } = await ctx(req);
    EmptyBody.parse(req.body ?? {});
    res.status(202).json({ session: await fireNow(deps, project, slug(req), actor) });
  });

  for (const verb of ['enable', 'disable'] as const) {
    r.post(`/:slug/${verb}`, async (req, res) => {
      const { project, actor } = await ctx(req);
      EmptyBody.parse(req.body ?? {});
      const cr = await deps.services.triggers.proposeEnabled(project, slug(req), verb === 'enable', actor);
      res.status(201).json({ change_request: serializeCr(cr) });
    });
  }
  return r;
}
