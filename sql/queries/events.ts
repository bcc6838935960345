import type { Query } from '../query.js';
import { advisoryLockQueries } from './advisory-locks.js';

/**
 * Columns every read returns, in the shape of `StoredEvent`. The xid8 goes out as text
 * under another name (`txid`): an output alias equal to a column name would capture a
 * bare ORDER BY, which would then sort the ids as strings ("1062" before "771").
 */
export const EVENT_COLUMNS = `global_position, transaction_id::text AS txid, stream_id, stream_position,
  event_id, type, data, metadata, project_id, recorded_at`;

/** One stream's append: `events` at positions `expected + 1 ...`, only if the stream is at `expected`. */
export interface StreamAppend {
  streamId: string;
  streamType: string;
  projectId: string | null;
  /** The version the events were decided on; 0: the stream must not exist yet. */
  expected: number;
  events: { eventId: string; type: string; data: unknown }[];
  metadata: unknown;
}

/**
 * What a statement family adds to the append (the CR projection): input columns each
 * append carries, a condition on its input row `i` for its stream to move, and CTEs that
 * run over `i JOIN s` (the appends whose stream moved).
 */
export interface AppendExtension {
  /** Extra input columns, as a column definition list (`cr_id uuid, row jsonb`). */
  columns?: string;
  guard?: string;
  ctes?: string;
}

/**
 * The one append statement, for any number of streams (group commit) and of events per
 * stream. The rule, stated once: a stream moves from `expected` to `expected + n` only if
 * it is still at `expected` (a stream at 0 must not exist), and its events are inserted
 * only if it moved; each append is checked on its own, so one that lost its race stores
 * nothing without affecting the others. Streams are locked in stream id order (the same
 * in every process: two batches never deadlock); events get their global positions in
 * input order. Returns the stored events.
 *
 * The appends arrive as one JSON array (`encodeAppends`), not as typed arrays or one
 * parameter per field: the planner cannot see its length, so the plan made for one
 * append is the plan for every batch and the prepared statement keeps one generic plan
 * (with arrays it re-planned on every execution, at about half a millisecond each).
 */
export function appendStatement(x: AppendExtension = {}): string {
  return `WITH i AS MATERIALIZED (
        SELECT * FROM jsonb_to_recordset($1::jsonb) AS i(stream_id text, stream_type text, project_id uuid, expected bigint,
          events jsonb, metadata jsonb, ord int${x.columns ? `, ${x.columns}` : ''})),
      s AS (
        INSERT INTO streams (stream_id, stream_type, project_id, version)
        SELECT i.stream_id, i.stream_type, i.project_id, i.expected + jsonb_array_length(i.events) FROM i
        ${x.guard ? `WHERE ${x.guard}` : ''}
        ORDER BY i.stream_id
        ON CONFLICT (stream_id) DO UPDATE
          SET version = EXCLUDED.version, updated_at = now()
          WHERE streams.version = (SELECT i.expected FROM i WHERE i.stream_id = EXCLUDED.stream_id)
        RETURNING stream_id),
      e AS (
        INSERT INTO events (stream_id, stream_position, event_id, type, data, metadata, project_id)
        SELECT i.stream_id, i.expected + x.pos, x.event_id, x.type, x.data, i.metadata, i.project_id
        FROM i JOIN s ON s.stream_id = i.stream_id,
          jsonb_to_recordset(i.events) AS x(pos int, event_id uuid, type text, data jsonb)
        ORDER BY i.ord, x.pos
        RETURNING ${EVENT_COLUMNS})${x.ctes ? `,
      ${x.ctes}` : ''}
      SELECT * FROM e ORDER BY global_position`;
}

/** The appends as the statement's one parameter; `extra` adds each append's extension columns. */
export function encodeAppends<A extends StreamAppend>(appends: A[], extra?: (a: A) => Record<string, unknown>): string {
  return JSON.stringify(
    appends.map((a, ord) => ({
      stream_id: a.streamId,
      stream_type: a.streamType,
      project_id: a.projectId,
      expected: a.expected,
      events: a.events.map((e, k) => ({ pos: k + 1, event_id: e.eventId, type: e.type, data: e.data })),
      metadata: a.metadata,
      ord,
      ...extra?.(a),
    })),
  );
}

const plainAppend = appendStatement();

export const eventQueries = {
  /** Appends to streams with no projection in the statement (sessions, manifests, tests). */
  append: (appends: StreamAppend[]): Query => ({
    name: 'events_append',
    text: plainAppend,
    values: [encodeAppends(appends)],
  }),

  /** Serialises appends to one stream for the rest of the transaction (the append-only mode). */
  lockStream: (streamId: string): Query => advisoryLockQueries.xactLock(streamId),

  byEventIds: (ids: string[]): Query => ({
    text: `SELECT ${EVENT_COLUMNS} FROM events WHERE event_id = ANY($1::uuid[]) ORDER BY stream_id, stream_position`,
    values: [ids],
  }),

  streamVersion: (streamId: string): Query => ({
    name: 'stream_version',
    text: 'SELECT version FROM streams WHERE stream_id = $1',
    values: [streamId],
  }),

  readStream: (streamId: string, upTo: Date | null): Query => ({
    text: `SELECT ${EVENT_COLUMNS} FROM events
      WHERE stream_id = $1 AND ($2::timestamptz IS NULL OR date_trunc('milliseconds', recorded_at) <= $2)
      ORDER BY stream_position`,
    values: [streamId, upTo],
  }),

  /**
   * Global read in commit-safe order: only transactions older than the oldest one still
   * running are visible, so a reader that has passed a position never misses an event.
   */
  readAll: (after: { txid: string; position: number }, limit: number, projectId: string | null): Query => ({
    text: `SELECT ${EVENT_COLUMNS} FROM events
      WHERE (events.transaction_id, events.global_position) > ($1::xid8, $2::bigint)
        AND events.transaction_id < pg_snapshot_xmin(pg_current_snapshot())
        AND ($4::uuid IS NULL OR events.project_id = $4::uuid)
      ORDER BY events.transaction_id, events.global_position
      LIMIT $3`,
    values: [after.txid, after.position, limit, projectId],
  }),

  /**
   * What the feed watcher compares between ticks: the last global position handed out
   * (committed or not: a hint that something was appended, read without touching the
   * table) and the horizon of the commit-safe read (it moves when a transaction that held
   * readers back ends).
   */
  latestPosition: (): Query => ({
    name: 'events_latest_position',
    text: `SELECT CASE WHEN is_called THEN last_value ELSE 0 END AS position,
        pg_snapshot_xmin(pg_current_snapshot())::text AS horizon
      FROM events_global_position_seq`,
    values: [],
  }),

  /** The checkpoint of one event, to resume a global read after it. */
  checkpointOf: (globalPosition: number): Query => ({
    text: 'SELECT transaction_id::text AS txid, global_position AS position FROM events WHERE global_position = $1',
    values: [globalPosition],
  }),

  /** The same, only for an event of `projectId`: a feed never resumes from another project's position. */
  checkpointOfInProject: (globalPosition: number, projectId: string): Query => ({
    text: 'SELECT transaction_id::text AS txid, global_position AS position FROM events WHERE global_position = $1 AND project_id = $2',
    values: [globalPosition, projectId],
  }),
};
