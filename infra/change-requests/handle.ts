import type { Db, Executor } from '../db/db.js';
import { randomUUID } from 'node:crypto';
import { append, ConcurrencyError, streamVersion, type StoredEvent } from '../event-store.js';
import {
  decide,
  fold,
  STREAM_TYPE,
  streamIdOf,
  type ChangeRequest,
  type ChangeRequestCommand,
  type ChangeRequestEvent,
} from '../../domain/change-request/index.js';
import { notFound } from '../../domain/errors.js';
import { crQueries } from '../../sql/queries/change-requests.js';
import { fromRow, projectChangeRequest, toRow, type CrRow } from '../../projections/change-requests.js';

export interface Handled {
  cr: ChangeRequest;
  events: StoredEvent[];
}

/**
 * Load, decide, append and project. The CR's current state comes from its projected row,
 * which carries the stream version it reflects; the event is appended with that version
 * expected and the row rewritten atomically with it. A concurrent writer makes the
 * append fail; the whole step is retried on fresh state.
 *
 * Two round trips: the row is read outside any transaction (a stale read is a stale
 * expected version, which the append refuses), and the append plus the projection are one
 * statement. With `inTx`, whose work must commit with the event, all of it runs in one
 * explicit transaction instead.
 */
type Decision =
  | { done: Handled }
  | { done?: undefined; state: ChangeRequest; version: number; events: ChangeRequestEvent[]; actor: string };

/** Reads the CR's row and decides on it: nothing to do, or the events to append at a version. */
async function decideOnRow(
  db: Executor,
  projectId: string,
  crId: string,
  command: (cr: ChangeRequest) => ChangeRequestCommand | null,
): Promise<Decision> {
  const row = await db.one<Record<string, unknown>>(crQueries.byId(projectId, crId));
  if (!row) throw notFound('Change request');
  const { stream_version, ...state } = fromRow(row);
  const cmd = command(state);
  const events = cmd ? decide(cmd, state) : [];
  if (!cmd || events.length === 0) return { done: { cr: state, events: [] } };
  return { state, version: stream_version, events, actor: cmd.meta.actor };
}

export async function handleCommand(
  db: Db,
  projectId: string,
  crId: string,
  command: (cr: ChangeRequest) => ChangeRequestCommand | null,
  opts: { attempts?: number; inTx?: (tx: Executor, cr: ChangeRequest) => Promise<void> } = {},
): Promise<Handled> {
  // Stream conflicts are retried on fresh state: the command is decided again, so a rule
  // that no longer holds (a close that raced a merge) is still a 409, and one that does
  // (an edit of the title) lands. Bounded, with full jitter so racing writers spread out.
  const attempts = opts.attempts ?? 50;
  if (!opts.inTx) {
    for (let i = 1; i <= attempts; i++) {
      const d = await decideOnRow(db, projectId, crId, command);
      if (d.done) return d.done;
      const [event] = d.events;
      if (d.events.length !== 1 || !event) break; // the decider emits at most one; if that changes, the transactional path serves
      const next = fold(d.events, d.state)!;
      const stored = await db.rows<StoredEvent>(
        crQueries.appendOneAndProject({
          streamId: streamIdOf(crId),
          streamType: STREAM_TYPE,
          projectId,
          expected: d.version,
          eventId: randomUUID(),
          type: event.type,
          data: event.data,
          metadata: { actor: d.actor },
          row: toRow(next, d.version + 1),
        }),
      );
      if (stored.length === 1) return { cr: next, events: stored };
      if (i === attempts) throw new ConcurrencyError(streamIdOf(crId), d.version, await streamVersion(db, streamIdOf(crId)));
      await backoff(i);
    }
  }
  for (let i = 1; ; i++) {
    try {
      return await db.transaction(async (tx) => {
        const d = await decideOnRow(tx, projectId, crId, command);
        if (d.done) return d.done;
        const stored = await appendAndProject(tx, projectId, crId, d.version, d.state, d.events, d.actor);
        await opts.inTx?.(tx, stored.cr);
        return stored;
      });
    } catch (err) {
      if (err instanceof ConcurrencyError && i < attempts) {
        await backoff(i);
        continue;
      }
      throw err;
    }
  }
}

/** Full jitter: a random wait up to min(50 ms, 1 ms * 2^attempt). */
const backoff = (attempt: number) => new Promise((r) => setTimeout(r, Math.random() * Math.min(50, 2 ** attempt)));

export async function appendAndProject(
  tx: Executor,
  projectId: string,
  crId: string,
  version: number,
  state: ChangeRequest | null,
  events: ChangeRequestEvent[],
  actor: string,
): Promise<Handled> {
  const res = await append(tx, {
    streamId: streamIdOf(crId),
    streamType: STREAM_TYPE,
    projectId,
    expectedVersion: version,
    events,
    metadata: { actor },
  });
  const next = fold(events, state)!;
  await projectChangeRequest(tx, next, res.nextVersion);
  return { cr: next, events: res.events };
}

export type { CrRow };
