import type { Db, Executor } from '../../infra/db/db.js';
import { randomUUID } from 'node:crypto';
import { ConcurrencyError, streamVersion, type EventMetadata, type StoredEvent } from '../../infra/event-store.js';
import {
  decide,
  fold,
  STREAM_TYPE,
  streamIdOf,
  type ChangeRequest,
  type ChangeRequestCommand,
  type CommandMeta,
  type ChangeRequestEvent,
} from '../../domain/change-request/index.js';
import { notFound } from '../../domain/errors.js';
import { crQueries, type CrAppendWithPatch } from '../../sql/queries/change-requests.js';
import { crOfRow, crRowPatch, decodeCrRow, type CrRow } from '../../sql/queries/change-request-row.js';
import { toRow } from '../../projections/change-requests.js';
import { appendAndPatch, type CrCommandPath } from './command-path.js';

export interface Handled {
  cr: ChangeRequest;
  events: StoredEvent[];
}

/**
 * Load, decide, append and project. The CR's current state comes from its projected row,
 * which carries the stream version it reflects; the event is appended with that version
 * expected and the row patched atomically with it. A concurrent writer makes the append
 * fail; the whole step is retried on fresh state.
 *
 * One round trip when the row is cached: the row this process last read or wrote for the
 * CR (a write-through cache per pool, keyed by CR, holding the row and its stream
 * version). A cached row can be stale (another process appended since); that costs one
 * refused append, after which the row is read again: the append's expected-version check
 * is authoritative, and only an append that was accepted is trusted. A decision on a
 * cached row that appends nothing (a no-op, a refused command) is taken again on the row
 * read from the database, so no answer rests on the cache alone.
 *
 * Otherwise two round trips: the row is read outside any transaction (grouped with the
 * reads of other commands at the same moment), then the append plus the row's patch are
 * one statement, group-committed with the other commands running at the same moment on
 * the same pool (one statement and one commit for all of them, each with its own
 * expected version: one that lost its race is retried alone, the others are stored).
 * With `inTx`, whose work must commit with the event, or on a dedicated connection (a
 * lock holder), all of it runs in one explicit transaction / on that connection instead.
 */
type Decision =
  | { done: Handled }
  | { done?: undefined; row: CrRow; state: ChangeRequest; events: ChangeRequestEvent[]; metadata: EventMetadata };

/** An event's metadata from its command's: who, and the agent session they acted through. */
export const metadataOf = (meta: CommandMeta): EventMetadata => (meta.session_id ? { actor: meta.actor, session_id: meta.session_id } : { actor: meta.actor });

/** Decides on a row: nothing to do, or the events to append at its version. */
function decideOn(row: CrRow, command: (cr: ChangeRequest) => ChangeRequestCommand | null): Decision {
  const state = crOfRow(row);
  const cmd = command(state);
  const events = cmd ? decide(cmd, state) : [];
  if (!cmd || events.length === 0) return { done: { cr: state, events: [] } };
  return { row, state, events, metadata: metadataOf(cmd.meta) };
}

/** The CR's row from the database (grouped with concurrent reads when `grouped` is given). */
async function readRow(db: Executor, projectId: string, crId: string, grouped?: CrCommandPath): Promise<CrRow> {
  const row = grouped ? await grouped.reads.submit({ projectId, crId }) : await db.one<Record<string, unknown>>(crQueries.byId(projectId, crId));
  if (!row) throw notFound('Change request');
  return decodeCrRow(row);
}

/** A decision on the cached row if it leads to an append; otherwise undefined (decide on the database's row). */
function decideOnCached(row: CrRow | undefined, command: (cr: ChangeRequest) => ChangeRequestCommand | null): Decision | undefined {
  if (!row) return undefined;
  try {
    const d = decideOn({ ...row }, command);
    return d.done || d.events.length !== 1 ? undefined : d;
  } catch {
    return undefined; // refused on what may be stale state: the database's row decides
  }
}

/**
 * Where a command runs: `db` (the pool, or a lock holder's connection) and the process's
 * command path (`commands`: group commit, grouped reads, cached rows on the pool).
 */
export interface CommandContext {
  db: Db;
  commands: CrCommandPath;
}

export async function handleCommand(
  cx: CommandContext,
  projectId: string,
  crId: string,
  command: (cr: ChangeRequest) => ChangeRequestCommand | null,
  opts: { attempts?: number; inTx?: (tx: Executor, cr: ChangeRequest, events: StoredEvent[]) => Promise<void> } = {},
): Promise<Handled> {
  // Stream conflicts are retried on fresh state: the command is decided again, so a rule
  // that no longer holds (a close that raced a merge) is still a 409, and one that does
  // (an edit of the title) lands. Bounded, with full jitter so racing writers spread out.
  const attempts = opts.attempts ?? 50;
  const key = `${projectId}/${crId}`;
  const { db, commands } = cx;
  if (!opts.inTx) {
    // Group commit and the cache serve the pool; a lock holder's connection goes alone.
    const pooled = db.dedicated ? undefined : commands;
    const cache = pooled?.rows;
    let staleCache = false;
    for (let i = 1; i <= attempts; i++) {
      let d = decideOnCached(cache?.get(key), command);
      const fromCache = d !== undefined;
      if (!d) {
        const row = await readRow(db, projectId, crId, pooled);
        cache?.remember(key, row);
        d = decideOn(row, command);
      }
      if (d.done) return d.done;
      const [event] = d.events;
      if (d.events.length !== 1 || !event) break; // the decider emits at most one; if that changes, the transactional path serves
      const version = d.row.stream_version;
      const next = toRow(fold(d.events, d.state)!, version + 1);
      const cmd: CrAppendWithPatch = {
        streamId: streamIdOf(crId),
        streamType: STREAM_TYPE,
        projectId,
        crId,
        expected: version,
        events: [{ eventId: randomUUID(), type: event.type, data: event.data }],
        metadata: d.metadata,
        patch: crRowPatch(d.row, next),
      };
      const one = pooled ? await pooled.appends.submit(cmd) : (await appendAndPatch(db, [cmd]))[0]!;
      if (one) {
        cache?.remember(key, next);
        return { cr: crOfRow(next), events: [one] };
      }
      cache?.delete(key);
      if (fromCache && !staleCache) {
        // A cached row that turned out stale is no contention: read it again at once, uncounted (once).
        staleCache = true;
        i--;
        continue;
      }
      if (i === attempts) throw new ConcurrencyError(streamIdOf(crId), version, await streamVersion(db, streamIdOf(crId)));
      await backoff(i);
    }
  }
  commands.rows.delete(key); // the transactional path moves the version without the cache
  for (let i = 1; ; i++) {
    try {
      return await db.transaction(async (tx) => {
        const d = decideOn(await readRow(tx, projectId, crId), command);
        if (d.done) return d.done;
        const stored = await appendAndProject(tx, projectId, crId, d.row.stream_version, d.state, d.events, d.metadata);
        await opts.inTx?.(tx, stored.cr, stored.events);
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

/**
 * The transactional path (opening a CR, `inTx`, lock holders): `events` appended at
 * `version` and the CR's whole row written, in one statement. A stream that moved meanwhile
 * stores nothing: ConcurrencyError.
 */
export async function appendAndProject(
  tx: Executor,
  projectId: string,
  crId: string,
  version: number,
  state: ChangeRequest | null,
  events: ChangeRequestEvent[],
  metadata: EventMetadata,
): Promise<Handled> {
  const next = fold(events, state)!;
  const streamId = streamIdOf(crId);
  const stored = await tx.rows<StoredEvent>(
    crQueries.appendAndUpsert([
      {
        streamId,
        streamType: STREAM_TYPE,
        projectId,
        crId,
        expected: version,
        events: events.map((e) => ({ eventId: randomUUID(), type: e.type, data: e.data })),
        metadata,
        row: toRow(next, version + events.length),
      },
    ]),
  );
  if (stored.length === events.length) return { cr: next, events: stored };
  const actual = await streamVersion(tx, streamId);
  throw new ConcurrencyError(streamId, version, actual === 0 ? null : actual);
}
