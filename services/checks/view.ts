import type { CrChecks } from '../../contracts/checks.js';
import { foldChecks, latestRuns, parseChangeRequestEvent, type AutoMerge, type ChangeRequest, type CheckRun, type ChecksState, type QueueEntry } from '../../domain/change-request/index.js';
import type { Manifest } from '../../domain/manifest/schema.js';
import type { ProjectRecord } from '../../domain/project.js';
import { checkQueries, type StatusRow } from '../../sql/queries/checks.js';
import { findCr } from '../change-requests/service.js';
import type { ChecksDeps } from './deps.js';
import { readCrChecks } from './stream.js';

const iso = (v: Date | string | null) => (v === null ? null : new Date(v).toISOString());

export const logPath = (projectId: string, crNumber: number, runId: string) =>
  `/v1/projects/${projectId}/change-requests/${crNumber}/checks/${runId}/log`;

/** `GET .../checks`: the latest run of each check, the head's statuses (required ones first), merge-when-green. */
export async function crChecksView(deps: Pick<ChecksDeps, 'db'>, project: ProjectRecord, ref: string, opts: { asOf?: Date } = {}): Promise<CrChecks> {
  const found = await findCr(deps.db, project.project_id, ref);
  const { cr, checks } = await readCrChecks(deps, found.cr_id, opts);
  return viewOf(deps, project, cr, checks);
}

/** The same view from a CR and its events already read (the dashboard's CR page reads them for its history). */
export async function checksViewFrom(deps: Pick<ChecksDeps, 'db'>, project: ProjectRecord, cr: ChangeRequest, events: { type: string; data: unknown }[]): Promise<CrChecks> {
  return viewOf(deps, project, cr, foldChecks(events.map(parseChangeRequestEvent)));
}

async function viewOf(deps: Pick<ChecksDeps, 'db'>, project: ProjectRecord, cr: ChangeRequest, checks: ChecksState): Promise<CrChecks> {
  const head = cr.head_commit_sha;
  const row = await deps.db.one<{ manifest: Partial<Manifest> | null; statuses: (Omit<StatusRow, 'created_at' | 'updated_at'> & { created_at: string; updated_at: string })[] }>(
    checkQueries.manifestAndStatuses(project.project_id, head),
  );
  const required = row?.manifest?.review?.required_statuses ?? [];
  const rows = head ? (row?.statuses ?? []) : [];
  const reported = new Set(rows.map((r) => r.context));
  const statuses: CrChecks['statuses'] = [
    ...(head
      ? required
          .filter((c) => !reported.has(c))
          .map((context) => ({ context, state: 'pending' as const, description: 'Expected: required by svc.toml, not reported yet', target_url: null, sha: head, required: true, created_at: null, updated_at: null }))
      : []),
    ...rows.map((r) => ({
      context: r.context,
      state: r.state,
      description: r.description,
      target_url: r.target_url,
      sha: r.sha,
      required: required.includes(r.context),
      created_at: iso(r.created_at),
      updated_at: iso(r.updated_at),
    })),
  ];
  return {
    checks: latestRuns(checks).map((r) => serializeRun(project.project_id, cr.number, r)),
    statuses,
    auto_merge: checks.auto_merge ? serializeAutoMerge(checks.auto_merge) : null,
    merge_queue: checks.queue ? serializeCrQueue(checks.queue) : null,
  };
}

export function serializeRun(projectId: string, crNumber: number, r: CheckRun): CrChecks['checks'][number] {
  return {
    run_id: r.run_id,
    name: r.name,
    status: r.status,
    base_sha: r.base_sha,
    head_sha: r.head_sha,
    merge_sha: r.merge_sha,
    started_at: iso(r.started_at),
    finished_at: iso(r.finished_at),
    exit_code: r.exit_code,
    reason: r.reason,
    log_url: logPath(projectId, crNumber, r.run_id),
  };
}

/** The CR's place in the merge queue, as its stream says. */
export function serializeCrQueue(q: QueueEntry): NonNullable<CrChecks['merge_queue']> {
  return { ...q, queued_at: iso(q.queued_at)!, left_at: iso(q.left_at), ahead: [...q.ahead] };
}

export function serializeAutoMerge(a: AutoMerge): NonNullable<CrChecks['auto_merge']> {
  return { ...a, requested_at: iso(a.requested_at)!, finished_at: iso(a.finished_at) };
}

export function serializeStatus(r: StatusRow, required: boolean): CrChecks['statuses'][number] {
  return { context: r.context, state: r.state, description: r.description, target_url: r.target_url, sha: r.sha, required, created_at: iso(r.created_at), updated_at: iso(r.updated_at) };
}
