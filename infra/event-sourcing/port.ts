import type { Executor, Query } from '../db/db.js';
import type { EventMetadata, StoredEvent } from '../event-store.js';
import type { AppendExtension } from '../../sql/queries/events.js';

/**
 * The one write path's parts, as types: a stream, a decider (pure, in domain/), a
 * projection (what the append writes beside its events) and the store both run over
 * (PostgreSQL, or memory for unit tests). The handler (./handler.ts) takes them as
 * parameters and imports none of them.
 */

/** One aggregate's stream. */
export interface StreamRef {
  id: string;
  type: string;
  projectId: string | null;
  /** `streamKey` of it, when made once by whoever built the ref (a hot path looks it up several times). */
  key?: string;
}

/** An event as a decider emits it (before it is stored). */
export interface Decided {
  type: string;
  data: unknown;
}

/** An aggregate's rules: pure functions of its folded state. */
export interface Decider<S, C, E extends Decided> {
  decide(command: C, state: S): E[];
  /** `events` applied to `state`, in order. */
  fold(events: E[], state: S): S;
  /** A stored event as the domain's event (its catalog's parse). */
  parse(e: StoredEvent): E;
  /** The state of a stream that does not exist. */
  readonly initial: S;
  /** The metadata a command's events are stored with. */
  metadata(command: C): EventMetadata;
  /** The project a stream belongs to, from its state (when the stream ref cannot say before it exists). */
  projectOf?(state: S): string | null;
}

/**
 * A statement family that extends the one append statement (`appendStatement`): its
 * extension (extra input columns, a guard, CTEs over the appends whose stream moved), its
 * prepared name, and each append's extra input values.
 */
export interface FusedWrite<In> {
  name: string;
  extension: AppendExtension;
  encode(input: In): Record<string, unknown>;
}

/**
 * What a projection writes with the events, in the same transaction: statements run after
 * the append (`project`), or a write fused into the append statement itself (`fused`: one
 * statement, no explicit transaction).
 */
export interface Projection<S> {
  /** Runs in the append's transaction, after it, with the state after the new events. */
  project?(tx: Executor, state: S, version: number, stored: StoredEvent[]): Promise<void>;
  /** The whole row written in the append statement (a projection that keeps one row per stream). */
  fused?: FusedWrite<{ state: S; version: number }>;
  /** Row mode: the projection keeps one row per stream, holding its state and version. */
  rows?: RowSource<S, any>;
}

/**
 * A projection's row per stream, which the handler may decide on instead of folding the
 * stream (`load: 'row'`): equal to the fold by construction (the row is written with its
 * events, at their version, from the same fold) and checked by `projections rebuild --verify`.
 */
export interface RowSource<S, R> {
  toRow(state: S, version: number): R;
  stateOf(row: R): S;
  versionOf(row: R): number;
  /** The row of one stream (undefined: none). */
  read(stream: StreamRef): Query;
  /** Rows of many streams in one statement (grouped reads). */
  readMany(streams: StreamRef[]): Query;
  decode(raw: Record<string, unknown>): R;
  /** The stream a result row belongs to (`streamKey` of it). */
  keyOf(raw: Record<string, unknown>): string;
  /** The append fused with a patch of the row from `prev` to `next` (guarded on the row's version). */
  patch: FusedWrite<{ prev: R; next: R }>;
}

/** The cache and group-commit key of a stream. */
export const streamKey = (s: StreamRef): string => s.key ?? `${s.projectId ?? ''}/${s.id}`;

/** One append the handler asks a store to make, with what the projection writes beside it. */
export interface Write<S> {
  stream: StreamRef;
  /** The version the events were decided on (0: the stream must not exist). */
  expected: number;
  events: Decided[];
  metadata: EventMetadata;
  /** The state after the events, at `expected + events.length`. */
  next: S;
  projection: Projection<S>;
  /** Row mode: the row decided on, so the write is a patch of it. */
  prevRow?: unknown;
}

/**
 * The event store as the handler sees it. `write` is atomic: the events at `expected`
 * and the projection's writes, or nothing (null: the stream had moved). Implemented over
 * PostgreSQL (./pg-store.ts) and in memory (./memory-store.ts).
 */
export interface EventStore {
  /** A stream's events in order. */
  read(stream: StreamRef): Promise<StoredEvent[]>;
  /** Row mode: the projection's row of the stream, undefined if none. */
  row<R>(rows: RowSource<any, R>, stream: StreamRef): Promise<R | undefined>;
  /** The row this store last read or wrote for the stream, if it keeps a cache (may be stale). */
  cached<R>(rows: RowSource<any, R>, stream: StreamRef): R | undefined;
  write<S>(w: Write<S>): Promise<StoredEvent[] | null>;
  /** Many streams' writes at once (each on its own: one that moved stores nothing). */
  writeMany<S>(ws: Write<S>[]): Promise<(StoredEvent[] | null)[]>;
  /** `fn` in one transaction, with a store bound to it (and its executor: a memory store's throws on use). */
  transaction<T>(fn: (store: EventStore, tx: Executor) => Promise<T>): Promise<T>;
  /** Whether this store is inside a transaction already (then `write` joins it). */
  readonly inTransaction: boolean;
  /** The stream's version now (for a ConcurrencyError's message). */
  version(stream: StreamRef): Promise<number>;
}
