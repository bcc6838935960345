import type { ChangeRequestEvent } from './events.js';
import type { DequeueReason } from './queue-events.js';

/**
 * The checks of one CR, folded from its stream (pure): every run with its status, and
 * the merge-when-green request. Read models for the API and the checks service's
 * decisions; both read the stream (a CR's stream is short), so `?as_of=` and a rebuild
 * see exactly what the live path sees.
 */
export type CheckStatus = 'queued' | 'running' | 'passed' | 'failed' | 'errored' | 'cancelled';

export interface CheckRun {
  run_id: string;
  name: string;
  status: CheckStatus;
  base_sha: string;
  head_sha: string;
  merge_sha: string | null;
  queued_at: string;
  started_at: string | null;
  finished_at: string | null;
  exit_code: number | null;
  reason: string | null;
  /** 'queue': a merge queue run on a speculative merge result; null: a run on the CR's own pair. */
  via: 'queue' | null;
}

export interface AutoMerge {
  status: 'pending' | 'merged' | 'cancelled';
  head_sha: string;
  requested_by: string;
  requested_at: string;
  finished_at: string | null;
  reason: string | null;
}

/** The CR's place in its base branch's merge queue, the latest time it entered. */
export interface QueueEntry {
  status: 'queued' | 'merged' | 'left';
  head_sha: string;
  base_sha: string;
  queued_by: string;
  queued_at: string;
  left_at: string | null;
  reason: DequeueReason | null;
  context: string | null;
  ahead: string[];
}

export interface ChecksState {
  /** In queue order. */
  runs: CheckRun[];
  auto_merge: AutoMerge | null;
  queue: QueueEntry | null;
}

export const TERMINAL: ReadonlySet<CheckStatus> = new Set(['passed', 'failed', 'errored', 'cancelled']);

/** `events` applied to `from` (no checks by default), in order. */
export function foldChecks(events: ChangeRequestEvent[], from: ChecksState = { runs: [], auto_merge: null, queue: null }): ChecksState {
  const runs = new Map<string, CheckRun>(from.runs.map((r) => [r.run_id, r]));
  let auto = from.auto_merge;
  let queue = from.queue ?? null;
  const finish = (id: string, patch: Partial<CheckRun>) => {
    const r = runs.get(id);
    if (r && !TERMINAL.has(r.status)) runs.set(id, { ...r, ...patch });
  };
  for (const e of events) {
    switch (e.type) {
      case 'CheckQueued':
        runs.set(e.data.run_id, {
          run_id: e.data.run_id, name: e.data.name, status: 'queued', base_sha: e.data.base_sha, head_sha: e.data.head_sha,
          merge_sha: e.data.merge_sha, queued_at: e.data.queued_at, started_at: null, finished_at: null, exit_code: null, reason: null,
          via: e.data.via ?? null,
        });
        break;
      case 'CheckStarted':
        finish(e.data.run_id, { status: 'running', started_at: e.data.started_at });
        break;
      case 'CheckPassed':
        finish(e.data.run_id, { status: 'passed', finished_at: e.data.finished_at, exit_code: 0 });
        break;
      case 'CheckFailed':
        finish(e.data.run_id, { status: 'failed', finished_at: e.data.finished_at, exit_code: e.data.exit_code, reason: e.data.reason });
        break;
      case 'CheckErrored':
        finish(e.data.run_id, { status: 'errored', finished_at: e.data.finished_at, reason: e.data.reason });
        break;
      case 'CheckCancelled':
        finish(e.data.run_id, { status: 'cancelled', finished_at: e.data.cancelled_at, reason: e.data.reason });
        break;
      case 'ChangeRequestAutoMergeRequested':
        auto = { status: 'pending', head_sha: e.data.head_sha, requested_by: e.data.requested_by, requested_at: e.data.requested_at, finished_at: null, reason: null };
        break;
      case 'ChangeRequestAutoMergeCancelled':
        if (auto?.status === 'pending') auto = { ...auto, status: 'cancelled', finished_at: e.data.cancelled_at, reason: e.data.context ? `${e.data.reason}: ${e.data.context}` : e.data.reason };
        break;
      case 'ChangeRequestMerged':
        if (auto?.status === 'pending') auto = { ...auto, status: 'merged', finished_at: e.data.merged_at };
        if (queue?.status === 'queued') queue = { ...queue, status: 'merged', left_at: e.data.merged_at };
        break;
      case 'ChangeRequestQueued':
        queue = { status: 'queued', head_sha: e.data.head_sha, base_sha: e.data.base_sha, queued_by: e.data.queued_by, queued_at: e.data.queued_at, left_at: null, reason: null, context: null, ahead: [] };
        break;
      case 'ChangeRequestDequeued':
        if (queue?.status === 'queued') queue = { ...queue, status: 'left', left_at: e.data.dequeued_at, reason: e.data.reason, context: e.data.context ?? null, ahead: e.data.ahead ?? [] };
        break;
      case 'ChangeRequestClosed':
        if (auto?.status === 'pending') auto = { ...auto, status: 'cancelled', finished_at: e.data.closed_at, reason: 'closed' };
        break;
      case 'ChangeRequestRetargeted':
        // A person's new base is not what merge-when-green was asked for: it ends with the
        // retarget (one event, so no pending merge is ever redirected). The server's
        // retarget of a merged parent's children keeps it: the stack lands where it was
        // going, once the checks pass on the new pair.
        if (auto?.status === 'pending' && e.data.by !== 'system') auto = { ...auto, status: 'cancelled', finished_at: e.data.retargeted_at, reason: 'base_changed' };
        break;
      default:
        break;
    }
  }
  return { runs: [...runs.values()], auto_merge: auto, queue };
}

/** The runs of one pair, the latest per check name (the CR's own runs: the queue's are about its speculative results). */
export function runsOfPair(state: ChecksState, base: string, head: string): CheckRun[] {
  const byName = new Map<string, CheckRun>();
  for (const r of state.runs) if (r.via === null && r.base_sha === base && r.head_sha === head) byName.set(r.name, r);
  return [...byName.values()];
}

/** The queue's runs on one speculative merge result, the latest per check name. */
export function runsOfResult(state: ChecksState, base: string, mergeSha: string): CheckRun[] {
  const byName = new Map<string, CheckRun>();
  for (const r of state.runs) if (r.via === 'queue' && r.base_sha === base && r.merge_sha === mergeSha) byName.set(r.name, r);
  return [...byName.values()];
}

/** Whether the CR waits in its base branch's merge queue now. */
export const isQueued = (state: ChecksState): boolean => state.queue?.status === 'queued';

/** The latest run of every check name (what the API lists). */
export function latestRuns(state: ChecksState): CheckRun[] {
  const byName = new Map<string, CheckRun>();
  for (const r of state.runs) byName.set(r.name, r);
  return [...byName.values()];
}

export type StatusState = 'pending' | 'success' | 'failure' | 'error';

/**
 * Whether merge-when-green may merge on pair (base, head), must wait, or is refused:
 * every check in force passed on exactly this pair and every required status is `success`
 * on the head.
 */
export function greenVerdict(
  state: ChecksState,
  pair: { base: string; head: string },
  checks: string[],
  required: string[],
  statuses: Map<string, StatusState>,
): { verdict: 'green' } | { verdict: 'wait' } | { verdict: 'red'; reason: 'check_failed' | 'status_failed'; context: string } {
  const runs = new Map(runsOfPair(state, pair.base, pair.head).map((r) => [r.name, r]));
  let wait = false;
  for (const name of checks) {
    const r = runs.get(name);
    if (!r || r.status === 'queued' || r.status === 'running' || r.status === 'cancelled') wait = true;
    else if (r.status === 'failed' || r.status === 'errored') return { verdict: 'red', reason: 'check_failed', context: name };
  }
  for (const ctx of required) {
    const s = statuses.get(ctx);
    if (s === 'failure' || s === 'error') return { verdict: 'red', reason: 'status_failed', context: ctx };
    if (s !== 'success') wait = true;
  }
  return wait ? { verdict: 'wait' } : { verdict: 'green' };
}
