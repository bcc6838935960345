import { Router, type Request } from 'express';
import type { ApiDeps } from '../deps.js';
import { principalOf } from '../auth.js';
import { resolveProject } from '../project-access.js';
import { CrChecksQuery, PostStatusBody } from '../../contracts/checks.js';
import type { ProjectRecord } from '../../domain/project.js';
import { LOG_HEADERS } from '../../services/checks/log-store.js';
import { serializeAutoMerge, serializeCrQueue, serializeStatus } from '../../services/checks/view.js';
import { assertMay } from '../../services/tokens/agent-policy.js';

/** `POST .../merge {"when":"checks_pass"}` (the CR route hands it here): 202 with the request. */
export async function mergeWhenGreenRoute(deps: ApiDeps, req: Request, project: ProjectRecord, ref: string, body: { expected_head_sha?: string | undefined }) {
  assertMay(principalOf(req), { kind: 'cr.merge' }); // people only
  const out = await deps.services.checks.mergeWhenGreen(project, ref, principalOf(req).user_id, body);
  return { auto_merge: serializeAutoMerge(out.auto_merge), ...(out.merge_queue ? { merge_queue: serializeCrQueue(out.merge_queue) } : {}) };
}

/** `/v1/projects/:projectId/change-requests/:crId/checks`: the runs, the head's statuses, merge-when-green; each run's log. */
export function checkRoutes(deps: ApiDeps): Router {
  const r = Router({ mergeParams: true });
  const crRef = (req: Request) => String(req.params.crId ?? '');

  r.get('/', async (req, res) => {
    const project = await resolveProject(deps, req);
    const q = CrChecksQuery.parse(req.query);
    res.json(await deps.services.checks.view(project, crRef(req), q.as_of ? { asOf: new Date(q.as_of) } : {}));
  });

  // The output of a program the CR's code controls: text only, never sniffed into HTML.
  r.get('/:runId/log', async (req, res) => {
    const project = await resolveProject(deps, req);
    const body = await deps.services.checks.readLog(project, crRef(req), String(req.params.runId ?? ''));
    res.set(LOG_HEADERS).send(body);
  });

  r.delete('/:runId/log', async (req, res) => {
    const project = await resolveProject(deps, req);
    await deps.services.checks.deleteLog(project, crRef(req), String(req.params.runId ?? ''));
    res.status(204).end();
  });

  return r;
}

/** `/v1/projects/:projectId/statuses/:sha`: an outside CI reports on a commit (people's tokens only: the agent gate refuses agents). */
export function statusRoutes(deps: ApiDeps): Router {
  const r = Router({ mergeParams: true });
  r.post('/:sha', async (req, res) => {
    const project = await resolveProject(deps, req);
    const body = PostStatusBody.parse(req.body ?? {});
    const row = await deps.services.checks.postStatus(project, String(req.params.sha ?? ''), principalOf(req).user_id, body);
    const required = (await deps.services.checks.inForce(project.project_id)).review.required_statuses.includes(row.context);
    res.status(201).json({ status: serializeStatus(row, required) });
  });
  return r;
}
