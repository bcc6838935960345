import { Router, type Request } from 'express';
import type { ApiDeps } from '../deps.js';
import { principalOf } from '../auth.js';
import { resolveProject } from '../project-access.js';
import { CrChecksQuery, PostStatusBody } from '../../contracts/checks.js';
import { notFound } from '../../domain/errors.js';
import type { ProjectRecord } from '../../domain/project.js';
import { checkQueries } from '../../sql/queries/checks.js';
import { findCr } from '../../services/change-requests/service.js';
import { requestAutoMerge } from '../../services/checks/auto-merge.js';
import { checksInForce } from '../../services/checks/config.js';
import { CHECK_EVALUATE, CHECK_RUN, type ChecksDeps } from '../../services/checks/deps.js';
import { postStatus } from '../../services/checks/statuses.js';
import { crChecksView, serializeAutoMerge, serializeStatus } from '../../services/checks/view.js';
import { assertMay } from '../../services/tokens/agent-policy.js';
import { crDepsOf } from './change-requests.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** The checks service from the API's deps: runs and merge-when-green evaluations go to the workers. */
export function checksDepsOf(deps: ApiDeps): ChecksDeps {
  const queue = deps.queue;
  return {
    ...crDepsOf(deps),
    box: deps.secrets,
    dataDir: deps.config.dataDir,
    enqueueRun: async (job) => void (await queue?.enqueue(CHECK_RUN, job, { retryLimit: 0 })),
    evaluateLater: queue ? async (project_id, cr_id) => void (await queue.enqueue(CHECK_EVALUATE, { project_id, cr_id })) : undefined,
  };
}

/** `POST .../merge {"when":"checks_pass"}` (the CR route hands it here): 202 with the request. */
export async function mergeWhenGreen(deps: ApiDeps, req: Request, project: ProjectRecord, ref: string, body: { expected_head_sha?: string | undefined }) {
  assertMay(principalOf(req), { kind: 'cr.merge' }); // people only
  const auto = await requestAutoMerge(checksDepsOf(deps), project, ref, principalOf(req).user_id, body);
  return { auto_merge: serializeAutoMerge(auto) };
}

/** `/v1/projects/:projectId/change-requests/:crId/checks`: the runs, the head's statuses, merge-when-green; each run's log. */
export function checkRoutes(deps: ApiDeps): Router {
  const r = Router({ mergeParams: true });
  const crRef = (req: Request) => String(req.params.crId ?? '');

  r.get('/', async (req, res) => {
    const project = await resolveProject(deps.db, req);
    const q = CrChecksQuery.parse(req.query);
    res.json(await crChecksView(checksDepsOf(deps), project, crRef(req), q.as_of ? { asOf: new Date(q.as_of) } : {}));
  });

  const logOf = async (req: Request) => {
    const project = await resolveProject(deps.db, req);
    const cr = await findCr(deps.db, project.project_id, crRef(req));
    const runId = String(req.params.runId ?? '').toLowerCase();
    if (!UUID.test(runId)) throw notFound('Check log');
    return { project, cr, runId };
  };

  // The output of a program the CR's code controls: text only, never sniffed into HTML.
  r.get('/:runId/log', async (req, res) => {
    const { project, cr, runId } = await logOf(req);
    const row = await deps.db.one<{ body: string; truncated: boolean }>(checkQueries.getLog(project.project_id, cr.cr_id, runId));
    if (!row) throw notFound('Check log');
    res.set({ 'Content-Type': 'text/plain; charset=utf-8', 'X-Content-Type-Options': 'nosniff', 'Content-Security-Policy': "default-src 'none'; sandbox", 'Cache-Control': 'no-store' });
    res.send(row.body);
  });

  r.delete('/:runId/log', async (req, res) => {
    const { project, cr, runId } = await logOf(req);
    if ((await deps.db.run(checkQueries.deleteLog(project.project_id, cr.cr_id, runId))) === 0) throw notFound('Check log');
    res.status(204).end();
  });

  return r;
}

/** `/v1/projects/:projectId/statuses/:sha`: an outside CI reports on a commit (people's tokens only: the agent gate refuses agents). */
export function statusRoutes(deps: ApiDeps): Router {
  const r = Router({ mergeParams: true });
  r.post('/:sha', async (req, res) => {
    const project = await resolveProject(deps.db, req);
    const body = PostStatusBody.parse(req.body ?? {});
    const row = await postStatus(checksDepsOf(deps), project, String(req.params.sha ?? ''), principalOf(req).user_id, body);
    const required = (await checksInForce(deps.db, project.project_id)).review.required_statuses.includes(row.context);
    res.status(201).json({ status: serializeStatus(row, required) });
  });
  return r;
}
