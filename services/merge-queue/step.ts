import { isDomainError } from '../../domain/errors.js';
import { runsOfResult, TERMINAL, type DequeueReason, type StatusState } from '../../domain/change-request/index.js';
import { chainTip, type BuiltEntry, type MergeQueueState, type MergeQueueStateOrNull } from '../../domain/merge-queue/index.js';
import type { ProjectRecord } from '../../domain/project.js';
import { failpointAsync } from '../../lib/failpoints.js';
import { mergeQueueQueries as mq, type QueuedRow } from '../../sql/queries/merge-queue.js';
import { projectQueries } from '../../sql/queries/projects.js';
import { afterMerge, buildMergeCommit } from '../change-requests/merge.js';
import { withMergeLock } from '../change-requests/merge-lock.js';
import { handleCommand } from '../change-requests/handle.js';
import { checksInForce } from '../checks/config.js';
import { CHECKS_ACTOR, statusesOf } from '../checks/schedule.js';
import { appendCheckEvents, readCrChecks, type CheckEvent } from '../checks/stream.js';
import type { QueueDeps } from './deps.js';
import { loadQueue } from './handle.js';
import { command, meta, nowIso, type Ctx } from './context.js';
import { queueRuns, resultsOf, type Result } from './runs.js';
import { nowOf } from '../../lib/clock.js';

/** Rounds of one step: each settles one thing (a landing, a failure, a rebuild) and looks again. */
const MAX_ROUNDS = 16;

/**
 * One step of the merge queue of (project, base branch), under the lock every merge, close
 * and reopen into that branch takes (so nothing else moves the base through svc meanwhile).
 * Idempotent and safe to run again at any point: everything it decides is read back from
 * the log and git first, so a worker killed anywhere leaves a state the next step finishes.
 *
 * Each round settles, in order: a landing recorded but not known to have happened (the base
 * holds the result: record the merges; still at the old base: land it again; elsewhere:
 * rebuild); CRs that left (closed, a moved head); a base moved outside the queue (rebuild);
 * the built chain against the queue's order (rebuild after the first entry that left); the
 * results of the checks on each speculative merge result (a failure leaves with
 * check_failed, the ones after it are rebuilt); the longest prefix that passed lands by
 * compare-and-swap after every head in it is read again; held conflicts whose CRs ahead
 * settled go to their agents; then the chain is extended up to `max_batch`.
 */
export async function stepQueue(
  deps: QueueDeps,
  projectId: string,
  baseRef: string,
  /** The sweeper's step also looks for runs lost with their workers (a lease read per running run): a job's step, asked when something happened, does not wait for that. */
  opts: { sweep?: boolean } = {},
): Promise<{ rounds: number; landed: number }> {
  const project = await deps.db.one<ProjectRecord>(projectQueries.byId(projectId));
  if (!project) return { rounds: 0, landed: 0 };
  return withMergeLock(deps, projectId, baseRef, async (db) => {
    const cx: Ctx = { deps: { ...deps, db }, project, baseRef, repo: deps.repos.for(project), config: await checksInForce(db, projectId), sweep: opts.sweep ?? false };
    let landed = 0;
    let rounds = 0;
    while (rounds < MAX_ROUNDS) {
      rounds++;
      const r = await round(cx);
      landed += r.landed;
      if (!r.progressed) break;
    }
    return { rounds, landed };
  });
}

async function round(cx: Ctx): Promise<{ progressed: boolean; landed: number }> {
  const { deps, project, baseRef, repo } = cx;
  const q = await loadQueue(deps.db, project.project_id, baseRef);
  const entries = await deps.db.rows<QueuedRow>(mq.entries(project.project_id, baseRef));
  if (!cx.config.merge_queue.enabled && !q?.landing && !q?.held.length) return { progressed: false, landed: 0 };
  const tips = await repo.readTips([baseRef, ...entries.map((e) => e.head_ref)]);
  const base = tips[baseRef] ?? null;
  if (base === null) return { progressed: false, landed: 0 };

  // A landing recorded before the base moved, not settled: the base says whether it happened.
  if (q?.landing) {
    const l = q.landing;
    if (base === l.merge_sha || (base !== l.base_sha && (await repo.branchContains(baseRef, l.merge_sha)))) {
      return { progressed: true, landed: await recordLanded(cx, q, entries) };
    }
    if (base !== l.base_sha) {
      await rebuild(cx, q, 'base_changed', 0);
      return { progressed: true, landed: 0 };
    }
    // Still at the old base: the compare-and-swap did not happen; it is decided again below.
  }

  // CRs that left: closed, or a head that moved from the one the person saw.
  const waiting: QueuedRow[] = [];
  let left = false;
  for (const e of entries) {
    if (e.status !== 'open') left = (await dequeue(cx, e, 'closed')) || left;
    else if (e.base_ref !== baseRef) left = (await dequeue(cx, e, 'base_changed')) || left;
    else if ((tips[e.head_ref] ?? null) !== e.head_sha) left = (await dequeue(cx, e, 'head_moved')) || left;
    else waiting.push(e);
  }

  if (q && q.built.length) {
    if (!q.landing && base !== q.base_sha) {
      await rebuild(cx, q, 'base_changed', 0);
      return { progressed: true, landed: 0 };
    }
    // The chain is the queue's first entries, in order, on the heads queued.
    const j = q.built.findIndex((b, i) => waiting[i]?.cr_id !== b.cr_id || waiting[i]?.head_sha !== b.head_sha);
    if (j >= 0) {
      await rebuild(cx, q, 'entry_left', j);
      return { progressed: true, landed: 0 };
    }
    const results = await resultsOf(cx, q.built);
    const failed = results.findIndex((r) => r.state === 'failed');
    let passed = 0;
    while (passed < results.length && results[passed]!.state === 'passed') passed++;
    if (failed >= 0 && failed < passed + 1 && !q.landing) {
      const b = q.built[failed]!;
      const e = waiting[failed]!;
      await dequeue(cx, e, 'check_failed', { context: results[failed]!.context });
      await rebuild(cx, q, 'entry_left', failed);
      if (deps.onFailed) await deps.onFailed(project, b.cr_id).catch((err: Error) => deps.logger.warn({ cr_id: b.cr_id, err: err.message }, 'a queue failure not sent to the agent'));
      return { progressed: true, landed: 0 };
    }
    if (passed > 0 || q.landing) {
      const count = q.landing ? q.landing.count : passed;
      const out = await land(cx, q, waiting, count, results);
      if (out !== 'none') return { progressed: true, landed: out === 'landed' ? count : 0 };
    }
  }

  if (q?.held.length && (await releaseHeld(cx, q))) return { progressed: true, landed: 0 };
  if (q?.landing || !cx.config.merge_queue.enabled) return { progressed: left, landed: 0 };
  return { progressed: (await extend(cx, q, waiting, base)) || left, landed: 0 };
}

/** Entry `e` leaves the queue with `reason`; its queue runs still going are cancelled. False: it had left already. */
async function dequeue(cx: Ctx, e: Pick<QueuedRow, 'cr_id' | 'head_sha'>, reason: DequeueReason, extra: { context?: string | undefined; ahead?: string[] } = {}): Promise<boolean> {
  const at = nowIso(cx.deps);
  const { appended } = await appendCheckEvents(cx.deps, cx.project.project_id, e.cr_id, CHECKS_ACTOR, (s) => {
    if (s.checks.queue?.status !== 'queued' || s.checks.queue.head_sha !== e.head_sha) return [];
    const out: CheckEvent[] = [
      {
        type: 'ChangeRequestDequeued',
        data: { head_sha: e.head_sha, reason, dequeued_at: at, ...(extra.context ? { context: extra.context.slice(0, 500) } : {}), ...(extra.ahead?.length ? { ahead: extra.ahead } : {}) },
      },
    ];
    const why = s.cr.status === 'open' ? 'superseded' : s.cr.status;
    for (const r of s.checks.runs) if (r.via === 'queue' && !TERMINAL.has(r.status)) out.push({ type: 'CheckCancelled', data: { run_id: r.run_id, cancelled_at: at, reason: why } });
    return out;
  });
  if (appended.length) cx.deps.logger.info({ cr_id: e.cr_id, reason, context: extra.context }, 'left the merge queue');
  return appended.length > 0;
}

/** The built entries from `kept` on are dropped (their runs cancelled) and built again; a landing not settled is dropped with them. */
async function rebuild(cx: Ctx, q: MergeQueueState, reason: 'base_changed' | 'entry_left', kept: number): Promise<void> {
  const at = nowIso(cx.deps);
  for (const b of q.built.slice(kept)) {
    await appendCheckEvents(cx.deps, cx.project.project_id, b.cr_id, CHECKS_ACTOR, (s) =>
      s.checks.runs
        .filter((r) => r.via === 'queue' && r.merge_sha === b.merge_sha && !TERMINAL.has(r.status))
        .map((r): CheckEvent => ({ type: 'CheckCancelled', data: { run_id: r.run_id, cancelled_at: at, reason: s.cr.status === 'open' ? 'superseded' : s.cr.status } })),
    );
  }
  await command(cx, () => ({ type: 'Rebuild', project_id: cx.project.project_id, base_ref: cx.baseRef, reason, kept, meta: meta(cx.deps) }));
  cx.deps.logger.info({ project_id: cx.project.project_id, base_ref: cx.baseRef, reason, kept }, 'merge queue rebuilt');
}


/**
 * The first `count` entries land: every head in them read again (one that moved leaves,
 * and nothing of it lands), the landing recorded, then the base moved from the chain's base
 * to their last result by compare-and-swap: exactly the commit the checks passed on.
 */
async function land(cx: Ctx, q: MergeQueueState, waiting: QueuedRow[], count: number, results: Result[]): Promise<'landed' | 'rebuilt' | 'none'> {
  const { deps, repo, baseRef } = cx;
  const batch = q.built.slice(0, count);
  const fresh = await repo.readTips([baseRef, ...waiting.slice(0, count).map((e) => e.head_ref)]);
  if (fresh[baseRef] !== q.base_sha) {
    await rebuild(cx, q, 'base_changed', 0);
    return 'rebuilt';
  }
  const moved = batch.findIndex((b, i) => fresh[waiting[i]!.head_ref] !== b.head_sha);
  if (moved >= 0) {
    await dequeue(cx, waiting[moved]!, 'head_moved');
    await rebuild(cx, q, 'entry_left', moved);
    return 'rebuilt';
  }
  const target = batch[count - 1]!.merge_sha;
  const recorded = await command(cx, () => ({ type: 'BeginLanding', count, meta: meta(deps) }));
  await failpointAsync('merge-queue.landing');
  try {
    if (target !== q.base_sha) await repo.moveBranch(baseRef, target, q.base_sha!);
  } catch (err) {
    if (isDomainError(err) && err.code === 'concurrency') {
      // The base moved outside the queue between the read and the swap: nothing landed.
      await rebuild(cx, recorded ?? q, 'base_changed', 0);
      return 'rebuilt';
    }
    throw err; // unknown outcome: the landing stays recorded, the next step settles it from the base
  }
  await failpointAsync('merge-queue.after-cas');
  deps.logger.info({ project_id: cx.project.project_id, base_ref: baseRef, count, sha: target, runs: results.slice(0, count).flatMap((r) => r.runs.map((x) => x.run_id)) }, 'merge queue landed');
  await recordLanded(cx, recorded ?? q, waiting);
  return 'landed';
}

/**
 * The landing happened (the base holds its result): each CR in it is recorded merged, once
 * (one already recorded by a step that died is left), naming the runs that passed on its
 * result and acting for the person who queued it; then the landing is closed.
 */
async function recordLanded(cx: Ctx, q: MergeQueueState, entries: QueuedRow[]): Promise<number> {
  const { deps, project } = cx;
  const l = q.landing!;
  let last = null;
  for (const [i, b] of q.built.slice(0, l.count).entries()) {
    const { checks } = await readCrChecks(deps, b.cr_id);
    const runs = runsOfResult(checks, b.base_sha, b.merge_sha).filter((r) => r.status === 'passed').map((r) => r.run_id);
    const actor = checks.queue?.queued_by ?? entries.find((e) => e.cr_id === b.cr_id)?.queued_by ?? CHECKS_ACTOR;
    try {
      const { cr } = await handleCommand(deps, project.project_id, b.cr_id, (cr) =>
        cr.status !== 'open'
          ? null
          : {
              type: 'MergeChangeRequest',
              data: { strategy: b.strategy, base_commit_sha: b.base_sha, head_commit_sha: b.head_sha, merge_commit_sha: b.merge_sha, via: 'queue', check_runs: runs },
              meta: { actor, now: nowOf(deps) },
            },
      );
      last = cr;
    } catch (err) {
      deps.logger.warn({ cr_id: b.cr_id, err: (err as Error).message }, 'a landed CR could not be recorded merged');
    }
    if (i === 0) await failpointAsync('merge-queue.records');
  }
  await command(cx, () => ({ type: 'FinishLanding', meta: meta(deps) }));
  if (last) afterMerge(deps, project, last);
  return l.count;
}

/** Held conflicts whose CRs ahead all settled (landed or left) go to their agents now, naming the ones that landed. */
async function releaseHeld(cx: Ctx, q: MergeQueueState): Promise<boolean> {
  let released = false;
  for (const h of q.held) {
    const states = await Promise.all(h.ahead.map(async (id) => (await readCrChecks(cx.deps, id).catch(() => null))?.checks.queue?.status ?? 'left'));
    if (states.some((s) => s === 'queued')) continue;
    const landed = h.ahead.filter((_, i) => states[i] === 'merged');
    await command(cx, () => ({ type: 'ReleaseConflict', cr_id: h.cr_id, landed, meta: meta(cx.deps) }));
    await sendConflict(cx, h.cr_id);
    released = true;
  }
  return released;
}

async function sendConflict(cx: Ctx, crId: string): Promise<void> {
  if (!cx.deps.onConflict) return;
  await cx.deps.onConflict(cx.project, crId).catch((err: Error) => cx.deps.logger.warn({ cr_id: crId, err: err.message }, 'a queue conflict not sent to the agent'));
}

/**
 * The chain grows to `max_batch` with the next CRs in queue order, each built on the end of
 * the chain exactly as a direct merge would make it. A CR whose required statuses failed
 * leaves (check_failed); one still waiting for them stops the growth (the order holds). A
 * CR that does not merge onto the chain leaves with conflict, held for its agent until the
 * CRs ahead of it settle.
 */
async function extend(cx: Ctx, q: MergeQueueStateOrNull, waiting: QueuedRow[], base: string): Promise<boolean> {
  const { deps, project, repo, config } = cx;
  let tip = chainTip(q) ?? base;
  const chain = [...(q?.built.map((b) => b.cr_id) ?? [])];
  let progressed = false;
  for (const e of waiting.slice(chain.length)) {
    if (chain.length >= config.merge_queue.max_batch) break;
    const statuses = new Map((await statusesOf(deps, project.project_id, e.head_sha)).map((r) => [r.context, r.state as StatusState]));
    const bad = config.review.required_statuses.find((c) => statuses.get(c) === 'failure' || statuses.get(c) === 'error');
    if (bad) {
      progressed = (await dequeue(cx, e, 'check_failed', { context: bad })) || progressed;
      continue;
    }
    if (config.review.required_statuses.some((c) => statuses.get(c) !== 'success')) break;
    let built;
    try {
      built = await buildMergeCommit(repo, e, tip, e.head_sha);
    } catch (err) {
      if (!isDomainError(err) || (err.code !== 'merge_failed' && err.code !== 'validation')) throw err;
      const files = Array.isArray(err.details.conflicts) ? (err.details.conflicts as string[]).slice(0, 20).join(', ') : err.message;
      // Named to the agent: the CRs ahead of it now, and those the queue landed since it entered.
      const since = (await deps.db.rows<{ cr_id: string; type: string; recorded_at: Date }>(mq.recent(project.project_id, cx.baseRef, 50)))
        .filter((r) => r.type === 'ChangeRequestMerged' && new Date(r.recorded_at).getTime() >= Date.parse(e.queued_at))
        .map((r) => r.cr_id);
      await dequeue(cx, e, 'conflict', { context: files, ahead: [...new Set([...since.reverse(), ...chain])] });
      if (chain.length) await command(cx, () => ({ type: 'HoldConflict', cr_id: e.cr_id, ahead: [...chain], meta: meta(deps) }));
      else await sendConflict(cx, e.cr_id);
      progressed = true;
      continue;
    }
    const entry: BuiltEntry = { cr_id: e.cr_id, number: e.number, head_sha: e.head_sha, base_sha: tip, merge_sha: built.merge_commit_sha, strategy: built.kind };
    await command(cx, () => ({ type: 'BuildEntry', project_id: project.project_id, base_ref: cx.baseRef, entry, meta: meta(deps) }));
    await failpointAsync('merge-queue.built');
    await queueRuns(cx, entry, config.checks.map((c) => c.name));
    deps.logger.info({ cr_id: e.cr_id, base: tip, merge_sha: entry.merge_sha }, 'merge queue built a result');
    chain.push(e.cr_id);
    tip = entry.merge_sha;
    progressed = true;
  }
  return progressed;
}
