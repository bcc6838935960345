import { randomUUID } from 'node:crypto';
import { isDomainError } from '../../domain/errors.js';
import { decideChecks, greenVerdict, missingChecks, type MergeResult, type StatusState } from '../../domain/change-request/index.js';
import type { ProjectRecord } from '../../domain/project.js';
import { checkQueries, type StatusRow } from '../../sql/queries/checks.js';
import { projectQueries } from '../../sql/queries/projects.js';
import { runMerge } from '../change-requests/merge.js';
import { SYSTEM_ACTOR } from '../manifest/audit-log.js';
import { checksInForce, type ChecksInForce } from './config.js';
import type { ChecksDeps } from './deps.js';
import { appendCheckEvents, readCrChecks } from './stream.js';
import { nowOf, epochMsOf } from '../../lib/clock.js';

/** Who records what the server decides by itself (the checks refresher, a run's end): the log's system actor. */
export const CHECKS_ACTOR = SYSTEM_ACTOR;

const REQUEUE_AFTER_MS = 120_000;

const iso = (deps: ChecksDeps) => nowOf(deps).toISOString();

/**
 * Brings a CR's checks in line with its recorded pair (base_sha, head_sha), as the
 * domain's `decideChecks` decides on the stream: runs of an older pair are cancelled, a
 * merge-when-green bound to another head is cancelled, and every check in force that has
 * no run on this pair is queued on the merge result (the commit the merge engine would
 * make; the head for a fast-forward), read from git here first. A pair that does not
 * merge gets its runs errored at once. Then merge-when-green is evaluated.
 */
export async function syncChecks(deps: ChecksDeps, project: ProjectRecord, crId: string, cfg?: ChecksInForce): Promise<void> {
  const config = cfg ?? (await checksInForce(deps.db, project.project_id));
  const first = await readCrChecks(deps, crId);
  const base = first.cr.base_commit_sha;
  const head = first.cr.head_commit_sha;
  // The merge result is read from git before the decision (which may not do I/O); it is
  // used only if the decision is still about the same pair.
  let merge: MergeResult | null = null;
  if (missingChecks(first, config.checks, { base, head }).length > 0 && base && head) {
    try {
      const r = await deps.repos.for(project).computeMerge(base, head, `Merge result for checks of CR #${first.cr.number}`);
      merge = { base, head, sha: r.merge_commit_sha, problem: null };
    } catch (err) {
      if (!isDomainError(err) || (err.code !== 'merge_failed' && err.code !== 'validation')) throw err;
      merge = { base, head, sha: null, problem: err.code === 'merge_failed' ? 'the head does not merge cleanly into the base' : 'the head and the base have no common history' };
    }
  }
  const queued: string[] = [];
  const { state } = await appendCheckEvents(deps, project.project_id, crId, CHECKS_ACTOR, (s) => {
    const out = decideChecks(s, { checks: config.checks, merge, at: iso(deps), nowMs: epochMsOf(deps), newRunId: randomUUID });
    queued.length = 0;
    for (const e of out) if (e.type === 'CheckQueued' && e.data.merge_sha) queued.push(e.data.run_id);
    return out;
  });
  // A run queued long ago whose job was lost (a crash between the append and the enqueue)
  // is queued again; a second job for a run that started is a no-op (runCheck).
  const stale = epochMsOf(deps) - REQUEUE_AFTER_MS;
  for (const r of state.checks.runs) if (r.status === 'queued' && Date.parse(r.queued_at) < stale) queued.push(r.run_id);
  for (const run_id of queued) await deps.enqueueRun({ project_id: project.project_id, cr_id: crId, run_id });
  // Only a pending request has anything to evaluate (the refresher calls this for every open CR).
  if (state.checks.auto_merge?.status === 'pending') await evaluateSoon(deps, project, crId, config);
}

/** Evaluates merge-when-green here, or has a worker do it (deps.evaluateLater). */
export async function evaluateSoon(deps: ChecksDeps, project: ProjectRecord, crId: string, cfg?: ChecksInForce): Promise<void> {
  if (deps.evaluateLater) await deps.evaluateLater(project.project_id, crId);
  else await evaluateAutoMerge(deps, project, crId, cfg);
}

/** Statuses reported for a commit, by context. */
export async function statusesOf(deps: Pick<ChecksDeps, 'db'>, projectId: string, sha: string): Promise<StatusRow[]> {
  return deps.db.rows<StatusRow>(checkQueries.statusesOf(projectId, sha));
}

/**
 * Merge when green: once every check in force passed on the CR's current pair and every
 * required status is `success` on its head, the merge runs, bound to that pair (the head
 * the person asked on, the base the checks ran against: if either moved, nothing merges
 * and the new pair's checks decide). A failure on the pair cancels the request.
 */
export async function evaluateAutoMerge(deps: ChecksDeps, project: ProjectRecord, crId: string, cfg?: ChecksInForce): Promise<'merged' | 'waiting' | 'cancelled' | 'none'> {
  const s = await readCrChecks(deps, crId);
  const auto = s.checks.auto_merge;
  if (s.cr.status !== 'open' || auto?.status !== 'pending') return 'none';
  const base = s.cr.base_commit_sha;
  const head = s.cr.head_commit_sha;
  if (!base || !head || head !== auto.head_sha) return 'waiting'; // syncChecks cancels a moved head
  const config = cfg ?? (await checksInForce(deps.db, project.project_id));
  const statuses = new Map((await statusesOf(deps, project.project_id, head)).map((r) => [r.context, r.state as StatusState]));
  const v = greenVerdict(s.checks, { base, head }, config.checks.map((c) => c.name), config.review.required_statuses, statuses);
  if (v.verdict === 'wait') return 'waiting';
  if (v.verdict === 'red') {
    await cancelAutoMerge(deps, project, crId, auto.head_sha, v.reason, v.context);
    return 'cancelled';
  }
  try {
    await runMerge(deps, { project_id: project.project_id, cr_id: crId, actor: auto.requested_by, expected_head_sha: head, expected_base_sha: base });
    deps.logger.info({ cr_id: crId, base, head }, 'merged when green');
    return 'merged';
  } catch (err) {
    if (isDomainError(err) && err.code === 'merge_failed') {
      await cancelAutoMerge(deps, project, crId, auto.head_sha, 'conflict');
      return 'cancelled';
    }
    // A moved base or head, a CR merged or closed meanwhile: the next refresh decides again.
    if (isDomainError(err) && ['concurrency', 'head_modified', 'conflict'].includes(err.code)) return 'waiting';
    throw err;
  }
}

/** `check.evaluate`'s job: by ids (the project may be gone). */
export async function evaluateById(deps: ChecksDeps, projectId: string, crId: string): Promise<string> {
  const project = await deps.db.one<ProjectRecord>(projectQueries.byId(projectId));
  return project ? evaluateAutoMerge(deps, project, crId) : 'none';
}

export async function cancelAutoMerge(
  deps: ChecksDeps,
  project: ProjectRecord,
  crId: string,
  headSha: string,
  reason: 'check_failed' | 'status_failed' | 'conflict' | 'head_moved',
  context?: string,
): Promise<void> {
  await appendCheckEvents(deps, project.project_id, crId, CHECKS_ACTOR, (s) =>
    s.checks.auto_merge?.status === 'pending' && s.checks.auto_merge.head_sha === headSha
      ? [{ type: 'ChangeRequestAutoMergeCancelled', data: { head_sha: headSha, cancelled_at: iso(deps), reason, ...(context ? { context } : {}) } }]
      : [],
  );
  deps.logger.info({ cr_id: crId, reason, context }, 'merge when green cancelled');
}
