import { DomainError, notFound } from '../errors.js';
import type { CheckEventType } from './check-events.js';
import { foldChecks, isQueued, runsOfPair, TERMINAL, type ChecksState } from './checks.js';
import type { CommandMeta } from './commands.js';
import { requireOpen } from './decide.js';
import { fold } from './evolve.js';
import { parseChangeRequestEvent, type ChangeRequestEvent } from './events.js';
import type { ChangeRequest } from './state.js';

/**
 * The checks' rules on a CR's stream (pure): which check events a state admits, and what
 * bringing a CR's checks in line with its pair decides. The checks service reads the
 * stream, reads git (the merge result) and the config, and asks these.
 */
export type CheckEvent = Extract<ChangeRequestEvent, { type: CheckEventType }>;

/** A CR with its checks, folded from its stream (null: no such CR). */
export type CrChecks = { cr: ChangeRequest; checks: ChecksState } | null;

/** Check events the checks service decided, to be admitted (or refused) by `decideCheckEvents`. */
export interface RecordCheckEvents {
  type: 'RecordCheckEvents';
  events: CheckEvent[];
  meta: CommandMeta;
}

export function foldCrChecks(events: ChangeRequestEvent[], from: CrChecks): CrChecks {
  const cr = fold(events, from?.cr ?? null);
  return cr ? { cr, checks: foldChecks(events, from?.checks) } : null;
}

const conflict = (message: string, details?: Record<string, unknown>) => new DomainError('conflict', 'Conflict', message, details);

/**
 * Admits each event on the state the ones before it leave: a run is queued once, only on
 * an open CR; a run starts only from queued and finishes only once (a result for a run
 * already finished changes nothing and is not appended); merge-when-green is asked only
 * on an open CR and cancelled only while pending on the same head.
 */
export function decideCheckEvents(command: RecordCheckEvents, state: CrChecks): CheckEvent[] {
  if (state === null) throw notFound('Change request');
  let s = state;
  const out: CheckEvent[] = [];
  for (const e of command.events) {
    const runId = 'run_id' in e.data ? (e.data as { run_id: string }).run_id : undefined;
    const run = runId === undefined ? undefined : s.checks.runs.find((r) => r.run_id === runId);
    switch (e.type) {
      case 'CheckQueued':
        requireOpen(s.cr, 'merge');
        if (run) throw conflict(`Check run ${e.data.run_id} is queued already.`, { run_id: e.data.run_id });
        break;
      case 'ChangeRequestAutoMergeRequested':
        requireOpen(s.cr, 'merge');
        break;
      case 'CheckStarted':
        if (!run) throw notFound('Check run');
        if (run.status !== 'queued') throw conflict(`Check run ${run.run_id} is ${run.status}; only a queued run starts.`, { status: run.status });
        break;
      case 'CheckPassed':
      case 'CheckFailed':
      case 'CheckErrored':
      case 'CheckCancelled':
        if (!run) throw notFound('Check run');
        if (TERMINAL.has(run.status)) continue; // finished already: the first result stands
        break;
      case 'ChangeRequestAutoMergeCancelled':
        if (s.checks.auto_merge?.status !== 'pending' || s.checks.auto_merge.head_sha !== e.data.head_sha) continue;
        break;
      case 'ChangeRequestQueued':
        requireOpen(s.cr, 'merge');
        if (s.checks.queue?.status === 'queued') {
          if (s.checks.queue.head_sha === e.data.head_sha) continue; // asked again on the same head: one entry
          throw conflict(`Change request #${s.cr.number} is queued already on head ${s.checks.queue.head_sha.slice(0, 12)}; remove it from the queue first.`, { head_sha: s.checks.queue.head_sha });
        }
        break;
      case 'ChangeRequestDequeued':
        // Only the entry it is about leaves, once: a late decision about an older entry changes nothing.
        if (s.checks.queue?.status !== 'queued' || s.checks.queue.head_sha !== e.data.head_sha) continue;
        break;
    }
    out.push(e);
    s = foldCrChecks([e], s)!;
  }
  return out;
}

/** The checks decider, for the command handler (state: the CR and its checks, folded from the stream). */
export const checksDecider = {
  decide: decideCheckEvents,
  fold: (events: ChangeRequestEvent[], state: CrChecks) => foldCrChecks(events, state),
  parse: parseChangeRequestEvent,
  initial: null as CrChecks,
  metadata: (c: RecordCheckEvents) => ({ actor: c.meta.actor }),
};

/** A check in force, as `decideChecks` needs it. */
export interface CheckInForce {
  name: string;
  timeout_minutes?: number | undefined;
}

/** The merge result of a pair, read from git before the decision; `sha` null when it does not merge. */
export interface MergeResult {
  base: string;
  head: string;
  sha: string | null;
  problem: string | null;
}

/** Past its timeout and this grace, a running run whose worker died errors. */
const LOST_GRACE_MS = 300_000;

/**
 * Checks in force with no live or finished run on the CR's recorded pair (none unless it
 * is open and has both SHAs). A run cancelled on this pair does not count: the pair moved
 * away and came back (a base retargeted and retargeted back), and its checks run again.
 */
export function missingChecks<T extends CheckInForce>(s: NonNullable<CrChecks>, checks: T[], pair: { base: string | null; head: string | null }): T[] {
  const { base, head } = pair;
  return s.cr.status === 'open' && !isQueued(s.checks) && base && head && s.cr.base_commit_sha === base && s.cr.head_commit_sha === head
    ? checks.filter((c) => !runsOfPair(s.checks, base, head).some((r) => r.name === c.name && r.status !== 'cancelled'))
    : [];
}

/**
 * Brings a CR's checks in line with its recorded pair (base_sha, head_sha): runs of an
 * older pair are cancelled (all of them once the CR is merged or closed), a run lost with
 * its worker errors, a merge-when-green bound to another head is cancelled, and every
 * check in force with no run on this pair is queued on `merge` (if it is still about this
 * pair), or errored at once when the pair does not merge.
 */
export function decideChecks(
  s: NonNullable<CrChecks>,
  input: { checks: CheckInForce[]; merge: MergeResult | null; at: string; nowMs: number; newRunId: () => string },
): CheckEvent[] {
  const { at } = input;
  const out: CheckEvent[] = [];
  const open = s.cr.status === 'open';
  const pair = { base: s.cr.base_commit_sha, head: s.cr.head_commit_sha };
  for (const r of s.checks.runs) {
    if (TERMINAL.has(r.status)) continue;
    if (r.via === 'queue' && open) continue; // the merge queue decides its own runs' fate
    // A queued CR's own pair runs pause: dropped (they come back when the CR leaves the queue).
    if (open && isQueued(s.checks)) out.push({ type: 'CheckCancelled', data: { run_id: r.run_id, cancelled_at: at, reason: 'superseded' } });
    else if (!open) out.push({ type: 'CheckCancelled', data: { run_id: r.run_id, cancelled_at: at, reason: s.cr.status === 'merged' ? 'merged' : 'closed' } });
    else if (r.base_sha !== pair.base || r.head_sha !== pair.head) out.push({ type: 'CheckCancelled', data: { run_id: r.run_id, cancelled_at: at, reason: 'superseded' } });
  }
  for (const r of s.checks.runs) {
    if (r.via === 'queue' || r.status !== 'running' || !r.started_at || r.base_sha !== pair.base || r.head_sha !== pair.head) continue;
    const limit = (input.checks.find((c) => c.name === r.name)?.timeout_minutes ?? 15) * 60_000 + LOST_GRACE_MS;
    if (input.nowMs - Date.parse(r.started_at) > limit) out.push({ type: 'CheckErrored', data: { run_id: r.run_id, finished_at: at, reason: 'the run was lost: its worker stopped before it finished' } });
  }
  const auto = s.checks.auto_merge;
  if (open && auto?.status === 'pending' && pair.head && auto.head_sha !== pair.head) {
    // Bound to the head the person saw: a new head is not what they asked to merge.
    out.push({ type: 'ChangeRequestAutoMergeCancelled', data: { head_sha: auto.head_sha, cancelled_at: at, reason: 'head_moved' } });
  }
  const merge = input.merge;
  // A queued CR's own pair runs pause: the queue checks what would land instead.
  if (merge && merge.base === pair.base && merge.head === pair.head && !isQueued(s.checks)) {
    for (const c of missingChecks(s, input.checks, { base: merge.base, head: merge.head })) {
      const run_id = input.newRunId();
      out.push({ type: 'CheckQueued', data: { run_id, name: c.name, base_sha: merge.base, head_sha: merge.head, merge_sha: merge.sha, queued_at: at } });
      if (!merge.sha) out.push({ type: 'CheckErrored', data: { run_id, finished_at: at, reason: merge.problem ?? 'no merge result' } });
    }
  }
  return out;
}
