import { Router, type Request } from 'express';
import { crNumberOf, type ChangeRequest } from '../../domain/change-request/index.js';
import type { ChangeRequest as ChangeRequestJson, CrStack } from '../../contracts/change-requests.js';
import type { StackEntry } from '../../services/change-requests/stack.js';
import type { ApiDeps } from '../deps.js';
import { principalOf } from '../auth.js';
import { setNextLink } from '../pagination.js';
import { resolveProject } from '../project-access.js';
import { EmptyBody } from '../../contracts/common.js';
import {
  CreateChangeRequestBody,
  EditChangeRequestBody,
  GetChangeRequestQuery,
  ListChangeRequestsQuery,
  MergeChangeRequestBody,
} from '../../contracts/change-requests.js';
import type { MergeRequest } from '../../services/change-requests/request-merge.js';
import type { ProjectRecord } from '../../domain/project.js';
import { formatSteps, step, traced } from '../../lib/step-trace.js';
import { assertMay, isAgent, openInputFor } from '../../services/tokens/agent-policy.js';
import { mergeWhenGreenRoute } from './checks.js';

/** The spec's columns, in its order: the CR object of every response. */
export function serializeCr(cr: ChangeRequest): ChangeRequestJson {
  return {
    cr_id: cr.cr_id,
    account_id: cr.account_id,
    project_id: cr.project_id,
    number: cr.number,
    title: cr.title,
    description: cr.description,
    base_ref: cr.base_ref,
    head_ref: cr.head_ref,
    status: cr.status,
    head_commit_sha: cr.head_commit_sha,
    base_commit_sha: cr.base_commit_sha,
    origin_session_id: cr.origin_session_id,
    created_by: cr.created_by,
    merged_at: cr.merged_at,
    merged_by: cr.merged_by,
    merge_commit_sha: cr.merge_commit_sha,
    closed_at: cr.closed_at,
    closed_by: cr.closed_by,
    metadata: cr.metadata,
    created_at: cr.created_at,
    updated_at: cr.updated_at,
  };
}

/** A CR's stack as the wire has it (`GET …/stack`, the CLI's `svc cr stack`). */
export function serializeStack(cr: ChangeRequest, stack: StackEntry[]): CrStack {
  return {
    cr_id: cr.cr_id,
    stack: stack.map((e) => ({ change_request: serializeCr(e.cr), parent_cr_id: e.cr.parent_cr_id, child_cr_ids: e.children, note: e.note })),
  };
}

/** A person's merge (the route and the dashboard's Merge button): counted in the merge metrics. */
export async function mergeAs(deps: ApiDeps, project: ProjectRecord, ref: string, actor: string, body: MergeRequest & { stack?: boolean | undefined }): Promise<ChangeRequest> {
  const merged = await deps.services.changeRequests.merge(project, ref, actor, body, () => deps.metrics.merges.inc({ outcome: 'conflict' }));
  deps.metrics.merges.inc({ outcome: 'merged' });
  return merged;
}

/** `/v1/projects/:projectId/change-requests`: every route needs write access to the project. */
export function changeRequestRoutes(deps: ApiDeps): Router {
  const r = Router({ mergeParams: true });
  const crs = deps.services.changeRequests;
  const ctx = async (req: Request) => {
    const p = principalOf(req);
    // `via`: an agent acts for its session's creator; the history names both.
    return { project: await resolveProject(deps, req), actor: p.user_id, via: isAgent(p) ? p.session_id : null };
  };
  const crRef = (req: Request) => String(req.params.crId ?? '');
  /** An agent changes only the CRs of its own session (services/tokens/agent-policy.ts). */
  const mayChange = async (req: Request, project: ProjectRecord) => {
    const p = principalOf(req);
    if (isAgent(p)) assertMay(p, { kind: 'cr.change', cr: await crs.find(project.project_id, crRef(req)) });
  };

  r.get('/', async (req, res) => {
    const { project, actor } = await ctx(req);
    const q = ListChangeRequestsQuery.parse(req.query);
    const page = await crs.list(project, q.status, { perPage: q.per_page, cursor: q.cursor }, actor);
    setNextLink(req, res, page.next_cursor);
    res.json({ change_requests: page.change_requests.map(serializeCr), next_cursor: page.next_cursor });
  });

  r.post('/', async (req, res) => {
    const { project, actor, via } = await ctx(req);
    const body = openInputFor(principalOf(req), CreateChangeRequestBody.parse(req.body ?? {}));
    const cr = await crs.open(project, actor, body, via);
    res.status(201).json({ change_request: serializeCr(cr) });
  });

  r.get('/:crId', async (req, res) => {
    const { project, actor } = await ctx(req);
    const q = GetChangeRequestQuery.parse(req.query);
    // Read with the token and the project (api/auth.ts) when the path asked for it by number.
    const found = q.as_of ? undefined : crs.loaded(req.loadedProject, project, crNumberOf(crRef(req)));
    const cr = await crs.get(project, crRef(req), actor, q.as_of ? { asOf: new Date(q.as_of) } : found !== undefined ? { found } : {});
    res.json({ change_request: serializeCr(cr) });
  });

  r.patch('/:crId', async (req, res) => {
    const { project, actor, via } = await ctx(req);
    const body = EditChangeRequestBody.parse(req.body ?? {});
    if (body.base_ref !== undefined) assertMay(principalOf(req), { kind: 'cr.retarget' }); // people only
    await mayChange(req, project);
    const cr = await crs.edit(project, crRef(req), actor, body, via);
    res.json({ change_request: serializeCr(cr) });
  });

  r.get('/:crId/stack', async (req, res) => {
    const { project } = await ctx(req);
    const { cr, stack } = await crs.stack(project, crRef(req));
    res.json(serializeStack(cr, stack));
  });

  r.get('/:crId/diff', async (req, res) => {
    const { project } = await ctx(req);
    res.json(await crs.diff(project, crRef(req)));
  });

  r.get('/:crId/merge-preview', async (req, res) => {
    const { project } = await ctx(req);
    res.json(await crs.preview(project, crRef(req)));
  });

  r.get('/:crId/events', async (req, res) => {
    const { project } = await ctx(req);
    res.json({ events: await crs.history(project, crRef(req)) });
  });

  r.post('/:crId/merge', (req, res) =>
    traced('merge', async () => {
      assertMay(principalOf(req), { kind: 'cr.merge' }); // a person merges, never a sandbox's credential
      const { project, actor } = await ctx(req);
      step('project');
      const body = MergeChangeRequestBody.parse(req.body ?? {});
      if (body.when === 'checks_pass') {
        res.status(202).json(await mergeWhenGreenRoute(deps, req, project, crRef(req), body));
        return;
      }
      const merged = await mergeAs(deps, project, crRef(req), actor, body);
      res.json({ change_request: serializeCr(merged) });
    }, { log: (t) => deps.logger.info({ steps: formatSteps(t) }, 'merge trace (ms)') }),
  );

  r.post('/:crId/close', async (req, res) => {
    const { project, actor, via } = await ctx(req);
    EmptyBody.parse(req.body ?? {});
    await mayChange(req, project);
    res.json({ change_request: serializeCr(await crs.close(project, crRef(req), actor, via)) });
  });

  r.post('/:crId/reopen', async (req, res) => {
    const { project, actor, via } = await ctx(req);
    EmptyBody.parse(req.body ?? {});
    await mayChange(req, project);
    res.json({ change_request: serializeCr(await crs.reopen(project, crRef(req), actor, via)) });
  });

  return r;
}
