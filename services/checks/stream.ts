import { ConcurrencyError, readStream } from '../../infra/event-store.js';
import { notFound } from '../../domain/errors.js';
import {
  decide,
  fold,
  foldChecks,
  parseChangeRequestEvent,
  streamIdOf,
  type ChangeRequest,
  type ChangeRequestEvent,
  type CheckEventType,
  type ChecksState,
} from '../../domain/change-request/index.js';
import { appendAndProject } from '../change-requests/handle.js';
import type { CrDeps } from '../change-requests/service.js';

export type CheckEvent = Extract<ChangeRequestEvent, { type: CheckEventType }>;

export interface CrWithChecks {
  cr: ChangeRequest;
  checks: ChecksState;
  version: number;
}

/** The CR and its checks, folded from its stream (optionally as of a time). */
export async function readCrChecks(deps: Pick<CrDeps, 'db'>, crId: string, opts: { asOf?: Date } = {}): Promise<CrWithChecks> {
  const stored = await readStream(deps.db, streamIdOf(crId), opts);
  const events = stored.map(parseChangeRequestEvent);
  const cr = fold(events);
  if (!cr) throw notFound('Change request');
  return { cr, checks: foldChecks(events), version: stored.length ? stored[stored.length - 1]!.stream_position : 0 };
}

/**
 * Decides check events on the CR and its checks as folded from the stream, and appends
 * them at that version (the row projected with them): a writer that raced in between makes
 * the append fail, and the decision is taken again on the fresh stream. Run decisions need
 * the runs, which only the stream holds, so this path never decides on a cached row.
 */
export async function appendCheckEvents(
  deps: CrDeps,
  projectId: string,
  crId: string,
  actor: string,
  decideEvents: (s: CrWithChecks) => CheckEvent[],
): Promise<{ state: CrWithChecks; appended: CheckEvent[] }> {
  for (let attempt = 1; ; attempt++) {
    const s = await readCrChecks(deps, crId);
    const events = decideEvents(s);
    if (events.length === 0) return { state: s, appended: [] };
    const now = deps.now ? deps.now() : new Date();
    const decided = events.flatMap((event) => decide({ type: 'RecordCheckEvent', event, meta: { actor, now } }, s.cr));
    try {
      await deps.db.transaction((tx) => appendAndProject(tx, projectId, crId, s.version, s.cr, decided, { actor }));
      deps.commands.rows.delete(`${projectId}/${crId}`); // the version moved without the command path's cache
      return { state: s, appended: events };
    } catch (err) {
      if (err instanceof ConcurrencyError && attempt < 50) {
        await new Promise((r) => setTimeout(r, Math.random() * Math.min(50, 2 ** attempt)));
        continue;
      }
      throw err;
    }
  }
}
