import { Router, type Request } from 'express';
import type { ApiDeps } from '../deps.js';
import { principalOf } from '../auth.js';
import { resolveProject } from '../project-access.js';
import { CrChecksQuery, PostStatusBody } from '../../contracts/checks.js';
import type { ProjectRecord } from '../../domain/project.js';
import { deleteCheckLog, LOG_HEADERS, readCheckLog } from '../../services/checks/log-store.js';
import { mergeWhenGreen } from '../../services/merge-queue/enqueue.js';
import { queueDepsOf } from './merge-queue.js';
import { checksInForce } from '../../services/checks/config.js';
import { CHECK_EVALUATE, CHECK_RUN, type ChecksDeps } from '../../services/checks/deps.js';
import { postStatus } from '../../services/checks/statuses.js';
import { crChecksView, serializeAutoMerge, serializeCrQueue, serializeStatus } from '../../services/checks/view.js';
import { assertMay } from '../../services/tokens/agent-policy.js';
import { crDepsOf } from './change-requests.js';

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
export async function mergeWhenGreenRoute(deps: ApiDeps, req: Request, project: ProjectRecord, ref: string, body: { expected_head_sha?: string | undefined }) {
  assertMay(principalOf(req), { kind: 'cr.merge' }); // people only
  const out = await mergeWhenGreen(queueDepsOf(deps), project, ref, principalOf(req).user_id, body);
  return { auto_merge: serializeAutoMerge(out.auto_merge), ...(out.merge_queue ? { merge_queue: serializeCrQueue(out.merge_queue) } : {}) };
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

  // The output of a program the CR's code controls: text only, never sniffed into HTML.
  r.get('/:runId/log', async (req, res) => {
    const project = await resolveProject(deps.db, req);
    const body = await readCheckLog(deps.db, project, crRef(req), String(req.params.runId ?? ''));
    res.set(LOG_HEADERS).send(body);
  });

  r.delete('/:runId/log', async (req, res) => {
    const project = await resolveProject(deps.db, req);
    await deleteCheckLog(deps.db, project, crRef(req), String(req.params.runId ?? ''));
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
