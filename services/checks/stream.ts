import { readStream } from '../../infra/event-store.js';
import { handle } from '../../infra/event-sourcing/handler.js';
import { pgStore } from '../../infra/event-sourcing/pg-store.js';
import { notFound } from '../../domain/errors.js';
import {
  checksDecider,
  foldCrChecks,
  parseChangeRequestEvent,
  streamIdOf,
  type ChangeRequest,
  type CheckEvent,
  type ChecksState,
} from '../../domain/change-request/index.js';
import { crChecksProjection, crStream } from '../../projections/change-requests.js';
import type { CrDeps } from '../change-requests/service.js';
import { nowOf } from '../../lib/clock.js';

export type { CheckEvent };

export interface CrWithChecks {
  cr: ChangeRequest;
  checks: ChecksState;
  version: number;
}

/** The CR and its checks, folded from its stream (optionally as of a time). */
export async function readCrChecks(deps: Pick<CrDeps, 'db'>, crId: string, opts: { asOf?: Date } = {}): Promise<CrWithChecks> {
  const stored = await readStream(deps.db, streamIdOf(crId), opts);
  const s = foldCrChecks(stored.map(parseChangeRequestEvent), null);
  if (!s) throw notFound('Change request');
  return { ...s, version: stored.length ? stored[stored.length - 1]!.stream_position : 0 };
}

/**
 * Check events through the one write path: decided on the CR and its checks as folded
 * from the stream (run decisions need the runs, which only the stream holds, so this
 * never decides on a cached row), admitted by the checks' decider, appended at that
 * version with the CR's row; a writer that raced in between makes the append fail, and
 * the decision is taken again on the fresh stream.
 */
export async function appendCheckEvents(
  deps: CrDeps,
  projectId: string,
  crId: string,
  actor: string,
  decideEvents: (s: CrWithChecks) => CheckEvent[],
): Promise<{ state: CrWithChecks; appended: CheckEvent[] }> {
  let decidedOn: CrWithChecks | undefined;
  const r = await handle(crStream(projectId, crId), checksDecider, crChecksProjection, {
    store: deps.store ?? pgStore(deps.db, deps.commands),
    load: 'stream',
    missing: () => notFound('Change request'),
    before: async (_tx, s) => {
      if (!s) throw notFound('Change request');
    },
    command: (s, version) => {
      decidedOn = { ...s!, version };
      const events = decideEvents(decidedOn);
      return events.length ? { type: 'RecordCheckEvents', events, meta: { actor, now: nowOf(deps) } } : null;
    },
  });
  const appended = r.events.map((e) => parseChangeRequestEvent(e) as CheckEvent);
  return { state: decidedOn!, appended };
}
