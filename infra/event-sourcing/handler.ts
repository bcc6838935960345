import type { Executor } from '../db/db.js';
import { append, ConcurrencyError, streamVersion, type StoredEvent } from '../event-store.js';
import { eventQueries } from '../../sql/queries/events.js';
import type { Decided, Decider, EventStore, Projection, RowSource, StreamRef, Write } from './port.js';
import { exponential, jittered } from '../../lib/backoff.js';

/**
 * The one write path: load, decide, append at the version decided on, project in the same
 * transaction (or statement). Every aggregate (change requests with their checks and
 * reviews, sessions) writes through `handle`; its decider and projection are parameters.
 *
 * - `load: 'stream'` folds the stream inside one transaction, decides, appends and runs
 *   the projection there; a concurrent append makes it fail and the whole step is retried.
 * - `load: 'row'` decides on the projection's row (its state and the stream version it
 *   reflects: equal to the fold, which `projections rebuild --verify` checks). The row
 *   comes from the store's cache when it holds one (one round trip; a stale one costs one
 *   refused append, after which the row is read again, uncounted), else from a read
 *   grouped with concurrent ones; the append and the row's patch are one statement,
 *   group-committed by a PostgreSQL store with a command path. A decision on a cached row
 *   that appends nothing is taken again on the stored row, so no answer rests on the
 *   cache alone. With `inTx`, or inside a transaction, the row is read and written in one
 *   explicit transaction instead.
 *
 * Conflicts are retried on fresh state: the command is decided again, so a rule that no
 * longer holds (a close that raced a merge) is still refused, and one that does lands.
 * Bounded, with full jitter so racing writers spread out.
 */
export interface HandleOptions<S, C> {
  store: EventStore;
  /** The command to run on the current state (at `version` of the stream); null: nothing to do. */
  command(state: S, version: number): C | null;
  /** How the state is loaded (default 'stream'); 'new': the stream must not exist yet (nothing read; the append at 0 checks it). */
  load?: 'stream' | 'row' | 'new';
  /** Default 50. */
  attempts?: number;
  /** Runs in the transaction after the decision, with the events stored (none when nothing changed). */
  inTx?(tx: Executor, state: S, stored: StoredEvent[]): Promise<void>;
  /** Runs in the transaction before the decision (`load: 'stream'`). */
  before?(tx: Executor, state: S): Promise<void>;
  /** The error for a stream that does not exist (no row; or the initial state and nothing decided). */
  missing(): Error;
}

export interface Handled<S> {
  state: S;
  /** The events stored (empty: nothing changed). */
  events: StoredEvent[];
  version: number;
}

export async function handle<S, C, E extends Decided>(
  stream: StreamRef,
  decider: Decider<S, C, E>,
  projection: Projection<S>,
  opts: HandleOptions<S, C>,
): Promise<Handled<S>> {
  const attempts = opts.attempts ?? 50;
  if ((opts.load ?? 'stream') === 'row') {
    const rows = projection.rows as RowSource<S, unknown> | undefined;
    if (!rows) throw new Error('load: row needs a projection that keeps rows');
    if (!opts.inTx && !opts.store.inTransaction) {
      const done = await fastRow(stream, decider, projection, rows, opts, attempts);
      if (done) return done;
    }
    return retried(attempts, () =>
      opts.store.transaction(async (store, tx) => {
        const row = await store.row(rows, stream);
        if (row === undefined) throw opts.missing();
        return decideAndWrite(store, tx, stream, decider, projection, opts, rows.stateOf(row), rows.versionOf(row));
      }),
    );
  }
  if (opts.load === 'new') {
    return opts.store.transaction((store, tx) => decideAndWrite(store, tx, stream, decider, projection, opts, decider.initial, 0));
  }
  return retried(attempts, () =>
    opts.store.transaction(async (store, tx) => {
      const stored = await store.read(stream);
      const state = decider.fold(stored.map((e) => decider.parse(e)), decider.initial);
      const version = stored.length ? stored[stored.length - 1]!.stream_position : 0;
      await opts.before?.(tx, state);
      return decideAndWrite(store, tx, stream, decider, projection, opts, state, version);
    }),
  );
}

/** Inside a transaction: decide on `state` at `version`, append and project; ConcurrencyError if the stream moved. */
async function decideAndWrite<S, C, E extends Decided>(
  store: EventStore,
  tx: Executor,
  stream: StreamRef,
  decider: Decider<S, C, E>,
  projection: Projection<S>,
  opts: HandleOptions<S, C>,
  state: S,
  version: number,
): Promise<Handled<S>> {
  const cmd = opts.command(state, version);
  const events = cmd ? decider.decide(cmd, state) : [];
  if (events.length === 0) {
    if (state === decider.initial) throw opts.missing();
    await opts.inTx?.(tx, state, []);
    return { state, events: [], version };
  }
  const next = decider.fold(events, state);
  const stored = await store.write({ stream: streamOf(stream, decider, next), expected: version, events, metadata: decider.metadata(cmd!), next, projection });
  if (!stored) throw await conflict(store, stream, version);
  await opts.inTx?.(tx, next, stored);
  return { state: next, events: stored, version: version + stored.length };
}

/** The stream with its project as the state after the events says, when the decider knows it. */
const streamOf = <S>(stream: StreamRef, decider: { projectOf?(s: S): string | null }, next: S): StreamRef =>
  decider.projectOf ? { ...stream, projectId: decider.projectOf(next) ?? stream.projectId } : stream;

/** The row mode's path without an explicit transaction; undefined: the transactional path decides. */
async function fastRow<S, C, E extends Decided>(
  stream: StreamRef,
  decider: Decider<S, C, E>,
  projection: Projection<S>,
  rows: RowSource<S, unknown>,
  opts: HandleOptions<S, C>,
  attempts: number,
): Promise<Handled<S> | undefined> {
  const { store } = opts;
  let staleCache = false;
  for (let i = 1; i <= attempts; i++) {
    let d = decideOnCached(store.cached(rows, stream), decider, rows, opts.command);
    const fromCache = d !== undefined;
    if (!d) {
      const row = await store.row(rows, stream);
      if (row === undefined) throw opts.missing();
      d = decideOnRow(row, decider, rows, opts.command);
    }
    if (d.done) return d.done;
    const version = rows.versionOf(d.row);
    const next = decider.fold(d.events, d.state);
    const w: Write<S> = { stream, expected: version, events: d.events, metadata: decider.metadata(d.cmd), next, projection, prevRow: d.row };
    const stored = await store.write(w);
    if (stored) return { state: next, events: stored, version: version + stored.length };
    if (fromCache && !staleCache) {
      // A cached row that turned out stale is no contention: read it again at once, uncounted (once).
      staleCache = true;
      i--;
      continue;
    }
    if (i === attempts) throw await conflict(store, stream, version);
    await backoff(i);
  }
  return undefined;
}

type RowDecision<S, C, E> =
  | { done: Handled<S> }
  | { done?: undefined; row: unknown; state: S; cmd: C; events: E[] };

function decideOnRow<S, C, E extends Decided>(row: unknown, decider: Decider<S, C, E>, rows: RowSource<S, unknown>, command: (s: S, version: number) => C | null): RowDecision<S, C, E> {
  const state = rows.stateOf(row);
  const cmd = command(state, rows.versionOf(row));
  const events = cmd ? decider.decide(cmd, state) : [];
  if (!cmd || events.length === 0) return { done: { state, events: [], version: rows.versionOf(row) } };
  return { row, state, cmd, events };
}

/** A decision on the cached row if it leads to an append; otherwise undefined (decide on the stored row). */
function decideOnCached<S, C, E extends Decided>(row: unknown, decider: Decider<S, C, E>, rows: RowSource<S, unknown>, command: (s: S, version: number) => C | null): RowDecision<S, C, E> | undefined {
  if (row === undefined) return undefined;
  try {
    const d = decideOnRow(row, decider, rows, command);
    return d.done ? undefined : d;
  } catch {
    return undefined; // refused on what may be stale state: the stored row decides
  }
}

/** The stream moved from `version`: the error names where it is now (none: it does not exist). */
async function conflict(store: EventStore, stream: StreamRef, version: number): Promise<ConcurrencyError> {
  const actual = await store.version(stream);
  return new ConcurrencyError(stream.id, version, actual === 0 ? null : actual);
}

async function retried<T>(attempts: number, fn: () => Promise<T>): Promise<T> {
  for (let i = 1; ; i++) {
    try {
      return await fn();
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
const backoff = (attempt: number) => new Promise((r) => setTimeout(r, jittered(exponential(1, attempt, 50) / 2, 1)));

/**
 * Many streams at once on rows the caller already read (a list page's refreshes): each
 * command decided on its row, all appends and row patches in one statement, not retried:
 * a stream that moved meanwhile stores nothing and gets null (its stored row stands).
 */
export async function handleMany<S, C, E extends Decided>(
  items: { stream: StreamRef; row: unknown; command: (s: S) => C | null }[],
  decider: Decider<S, C, E>,
  projection: Projection<S>,
  store: EventStore,
): Promise<(Handled<S> | null)[]> {
  const rows = projection.rows as RowSource<S, unknown> | undefined;
  if (!rows) throw new Error('handleMany needs a projection that keeps rows');
  const writes: Write<S>[] = [];
  const at: number[] = [];
  items.forEach((it, k) => {
    const d = decideOnRow(it.row, decider, rows, it.command);
    if (d.done) return;
    const version = rows.versionOf(d.row);
    writes.push({ stream: it.stream, expected: version, events: d.events, metadata: decider.metadata(d.cmd), next: decider.fold(d.events, d.state), projection, prevRow: d.row });
    at.push(k);
  });
  const out: (Handled<S> | null)[] = items.map(() => null);
  if (writes.length === 0) return out;
  const stored = await store.writeMany(writes);
  stored.forEach((s, j) => {
    if (s) out[at[j]!] = { state: writes[j]!.next, events: s, version: writes[j]!.expected + s.length };
  });
  return out;
}

/**
 * The append-only mode, for audit logs kept beside tables written directly (manifest,
 * secrets, triggers, apps): no decider, no projection (a rebuild never touches them).
 * Appends to one stream are serialised by a transaction-scoped advisory lock, so the
 * version read is the version appended at. Call inside a transaction.
 */
export async function appendOnly(tx: Executor, stream: StreamRef, events: Decided[], actor: string): Promise<StoredEvent[]> {
  if (events.length === 0) return [];
  await tx.run(eventQueries.lockStream(stream.id));
  const version = await streamVersion(tx, stream.id);
  const res = await append(tx, { streamId: stream.id, streamType: stream.type, projectId: stream.projectId, expectedVersion: version, events, metadata: { actor } });
  return res.events;
}
