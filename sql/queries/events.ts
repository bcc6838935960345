import type { Query } from '../query.js';

/**
 * Columns every read returns, in the shape of `StoredEvent`. The xid8 goes out as text
 * under another name (`txid`): an output alias equal to a column name would capture a
 * bare ORDER BY, which would then sort the ids as strings ("1062" before "771").
 */
export const EVENT_COLUMNS = `global_position, transaction_id::text AS txid, stream_id, stream_position,
  event_id, type, data, metadata, project_id, recorded_at`;

/**
 * Appending one event as two CTEs, `s` (the stream moves from $4 to $4 + 1, only if it is
 * still at $4) and `e` (the event, inserted only if the stream moved). Parameters: $1
 * stream id, $2 stream type, $3 project id, $4 expected version, $5 event id, $6 type,
 * $7 data, $8 metadata. Shared by the plain append and the CR command path.
 */
export const APPEND_ONE_CTES = `WITH s AS (
        INSERT INTO streams (stream_id, stream_type, project_id, version)
        VALUES ($1, $2, $3, $4::bigint + 1)
        ON CONFLICT (stream_id) DO UPDATE
          SET version = streams.version + 1, updated_at = now()
          WHERE streams.version = $4::bigint
        RETURNING version),
      e AS (
        INSERT INTO events (stream_id, stream_position, event_id, type, data, metadata, project_id)
        SELECT $1, $4::bigint + 1, $5::uuid, $6, $7::jsonb, $8::jsonb, $3 FROM s
        RETURNING ${EVENT_COLUMNS})`;

export const eventQueries = {
  /**
   * Moves the stream from `expected` to `expected + n` and inserts the events, in one
   * statement. Returns no rows when the stream is not at `expected` (0: must not exist).
   */
  append: (p: {
    streamId: string;
    streamType: string;
    projectId: string | null;
    expected: number;
    eventIds: string[];
    types: string[];
    data: unknown[];
    metadata: unknown;
  }): Query => ({
    text: `WITH s AS (
        INSERT INTO streams (stream_id, stream_type, project_id, version)
        VALUES ($1, $2, $3, $4::bigint + cardinality($5::uuid[]))
        ON CONFLICT (stream_id) DO UPDATE
          SET version = streams.version + cardinality($5::uuid[]), updated_at = now()
          WHERE streams.version = $4::bigint
        RETURNING version)
      INSERT INTO events (stream_id, stream_position, event_id, type, data, metadata, project_id)
      SELECT $1, $4::bigint + e.ord, e.event_id, e.type, e.data, $8::jsonb, $3
      FROM s, unnest($5::uuid[], $6::text[], $7::jsonb[]) WITH ORDINALITY AS e(event_id, type, data, ord)
      ORDER BY e.ord
      RETURNING ${EVENT_COLUMNS}`,
    values: [
      p.streamId,
      p.streamType,
      p.projectId,
      p.expected,
      p.eventIds,
      p.types,
      p.data.map((d) => JSON.stringify(d)),
      JSON.stringify(p.metadata),
    ],
  }),

  /**
   * `append` for exactly one event: the same statement without the arrays, `unnest` and
   * ordering, which Postgres parses and plans measurably faster (one-event appends are
   * the common case: every command). Same effects, same rows, same conflict behaviour.
   */
  appendOne: (p: {
    streamId: string;
    streamType: string;
    projectId: string | null;
    expected: number;
    eventId: string;
    type: string;
    data: unknown;
    metadata: unknown;
  }): Query => ({
    name: 'events_append_one',
    text: `${APPEND_ONE_CTES}
      SELECT * FROM e`,
    values: [p.streamId, p.streamType, p.projectId, p.expected, p.eventId, p.type, JSON.stringify(p.data), JSON.stringify(p.metadata)],
  }),

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
