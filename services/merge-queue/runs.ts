import { epochMsOf } from '../../lib/clock.js';
import { randomUUID } from 'node:crypto';
import { runsOfResult, type CheckRun } from '../../domain/change-request/index.js';
import type { BuiltEntry } from '../../domain/merge-queue/index.js';
import { CHECKS_ACTOR } from '../checks/schedule.js';
import { appendCheckEvents, readCrChecks, type CheckEvent } from '../checks/stream.js';
import { nowIso, type Ctx } from './context.js';
import { runIsOrphaned } from './lease.js';

/** A run queued this long with no worker on it is queued again (its job was lost with a worker). */
const REQUEUE_AFTER_MS = 5_000;

export type Result = { state: 'passed' | 'pending' | 'failed'; context?: string; runs: CheckRun[] };

/**
 * What the checks say about each speculative result: every check in force passed on it,
 * one failed or errored, or some are still to come. A check with no run (a crash between
 * the build and the queueing) is queued now; a run whose worker died is replaced; a run
 * queued long ago with no worker is queued again.
 */
export async function resultsOf(cx: Ctx, built: BuiltEntry[]): Promise<Result[]> {
  const out: Result[] = [];
  for (const b of built) {
    const { checks } = await readCrChecks(cx.deps, b.cr_id);
    const runs = runsOfResult(checks, b.base_sha, b.merge_sha);
    const byName = new Map(runs.map((r) => [r.name, r]));
    const failed = cx.config.checks.find((c) => ['failed', 'errored'].includes(byName.get(c.name)?.status ?? ''));
    if (failed) {
      out.push({ state: 'failed', context: failed.name, runs });
      continue;
    }
    const missing: string[] = [];
    let pending = false;
    for (const c of cx.config.checks) {
      const r = byName.get(c.name);
      if (!r || r.status === 'cancelled') missing.push(c.name);
      else if (r.status === 'running' && cx.sweep && (await runIsOrphaned(cx.deps.db, r.run_id))) {
        await replaceLostRun(cx, b, r);
        missing.push(c.name);
      } else if (r.status === 'queued' && cx.sweep && epochMsOf(cx.deps) - Date.parse(r.queued_at) > REQUEUE_AFTER_MS) {
        await (cx.deps.requeueRun ?? cx.deps.enqueueRun)({ project_id: cx.project.project_id, cr_id: b.cr_id, run_id: r.run_id });
        pending = true;
      } else if (r.status !== 'passed') pending = true;
    }
    if (missing.length) await queueRuns(cx, b, missing);
    out.push({ state: missing.length || pending ? 'pending' : 'passed', runs });
  }
  return out;
}

/** A running queue run whose worker died: cancelled (a run of the same check replaces it: nobody's check failed). */
async function replaceLostRun(cx: Ctx, b: BuiltEntry, r: CheckRun): Promise<void> {
  await appendCheckEvents(cx.deps, cx.project.project_id, b.cr_id, CHECKS_ACTOR, (s) => {
    const now = s.checks.runs.find((x) => x.run_id === r.run_id);
    return now?.status === 'running' ? [{ type: 'CheckCancelled', data: { run_id: r.run_id, cancelled_at: nowIso(cx.deps), reason: 'superseded' } }] : [];
  });
  cx.deps.logger.warn({ cr_id: b.cr_id, run_id: r.run_id }, 'a queue check lost with its worker runs again');
}

/** Queues the named checks on speculative result `b` (marked as the queue's), then their jobs. */
export async function queueRuns(cx: Ctx, b: BuiltEntry, names: string[]): Promise<void> {
  const at = nowIso(cx.deps);
  const { appended } = await appendCheckEvents(cx.deps, cx.project.project_id, b.cr_id, CHECKS_ACTOR, (s) => {
    if (s.cr.status !== 'open') return [];
    const have = new Set(runsOfResult(s.checks, b.base_sha, b.merge_sha).filter((r) => r.status !== 'cancelled').map((r) => r.name));
    return names
      .filter((n) => !have.has(n))
      .map((name): CheckEvent => ({ type: 'CheckQueued', data: { run_id: randomUUID(), name, base_sha: b.base_sha, head_sha: b.head_sha, merge_sha: b.merge_sha, queued_at: at, via: 'queue' } }));
  });
  for (const e of appended) if (e.type === 'CheckQueued') await cx.deps.enqueueRun({ project_id: cx.project.project_id, cr_id: b.cr_id, run_id: e.data.run_id });
}

