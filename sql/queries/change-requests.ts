import type { Query } from '../query.js';
import { APPEND_ONE_CTES, EVENT_COLUMNS } from './events.js';

/** Every column of `change_requests`, in table order. */
export const CR_COLUMNS = [
  'cr_id', 'account_id', 'project_id', 'number', 'title', 'description', 'base_ref', 'head_ref', 'status',
  'head_commit_sha', 'base_commit_sha', 'origin_session_id', 'created_by', 'merged_at', 'merged_by',
  'merge_commit_sha', 'closed_at', 'closed_by', 'metadata', 'created_at', 'updated_at', 'stream_version',
] as const;

/** The tables a CR row can be written to: the live projection or a rebuild's scratch copy. */
type CrTable = 'change_requests' | 'cr_rebuilt';

/** Explicit columns, never `*`: a prepared `*` breaks when a migration adds a column. */
const selectCols = CR_COLUMNS.join(', ');

const setAll = CR_COLUMNS.filter((c) => c !== 'cr_id')
  .map((c) => `${c} = EXCLUDED.${c}`)
  .join(', ');

/** Each column's type, to read it out of a JSON patch. */
const CR_TYPES: Record<(typeof CR_COLUMNS)[number], string> = {
  cr_id: 'uuid', account_id: 'uuid', project_id: 'uuid', number: 'integer', title: 'text', description: 'text',
  base_ref: 'text', head_ref: 'text', status: 'cr_status', head_commit_sha: 'text', base_commit_sha: 'text',
  origin_session_id: 'text', created_by: 'uuid', merged_at: 'timestamptz', merged_by: 'uuid', merge_commit_sha: 'text',
  closed_at: 'timestamptz', closed_by: 'uuid', metadata: 'jsonb', created_at: 'timestamptz', updated_at: 'timestamptz',
  stream_version: 'bigint',
};

/**
 * Every column but the key set from the patch `i.patch` when it names the column, kept
 * otherwise: a key lookup per column and a conversion only for what changed.
 */
const setFromPatch = CR_COLUMNS.filter((c) => c !== 'cr_id')
  .map((c) => `${c} = CASE WHEN i.patch ? '${c}' THEN ${CR_TYPES[c] === 'jsonb' ? `i.patch -> '${c}'` : `(i.patch ->> '${c}')::${CR_TYPES[c]}`} ELSE c.${c} END`)
  .join(',\n          ');

/**
 * Rows arrive as JSON and are typed by the table's own row type. A row whose project is
 * gone is not written (the project's deletion cascaded it away), and an origin session
 * that no longer exists is written as null, exactly as the foreign keys would have left it.
 */
const guardedRows = (source: string) => `
  SELECT r.cr_id, r.account_id, r.project_id, r.number, r.title, r.description, r.base_ref, r.head_ref,
    r.status, r.head_commit_sha, r.base_commit_sha,
    CASE WHEN EXISTS (SELECT 1 FROM project_sessions s WHERE s.session_id = r.origin_session_id)
      THEN r.origin_session_id END,
    r.created_by, r.merged_at, r.merged_by, r.merge_commit_sha, r.closed_at, r.closed_by, r.metadata,
    r.created_at, r.updated_at, r.stream_version
  FROM ${source} r
  WHERE EXISTS (SELECT 1 FROM projects p WHERE p.project_id = r.project_id)`;

/**
 * One CR event to append at `expected` with the change it makes to the CR's row (the
 * command path): `patch` holds only the columns that change, `stream_version` always.
 */
export interface ProjectedAppend {
  streamId: string;
  streamType: string;
  projectId: string;
  crId: string;
  expected: number;
  eventId: string;
  type: string;
  data: unknown;
  metadata: unknown;
  patch: object;
}

export const crQueries = {
  upsert: (row: object): Query => ({
    name: 'cr_upsert',
    text: `INSERT INTO change_requests
      ${guardedRows('jsonb_populate_record(null::change_requests, $1::jsonb)')}
      ON CONFLICT (cr_id) DO UPDATE SET ${setAll}`,
    values: [JSON.stringify(row)],
  }),

  /**
   * One event appended to a CR stream and the CR's whole row upserted, in one statement
   * (the transactional path: opening a CR, lock holders): the stream moves from
   * `expected` only if it is still there, and the row is written only if the event was.
   * Parameters as `APPEND_ONE_CTES`, $9 the row. Returns the stored event, or no row when
   * the stream had moved on.
   */
  appendOneAndProject: (p: { streamId: string; streamType: string; projectId: string; expected: number; eventId: string; type: string; data: unknown; metadata: unknown; row: object }): Query => ({
    name: 'cr_append_one_and_project',
    text: `${APPEND_ONE_CTES},
      p AS (
        INSERT INTO change_requests
        ${guardedRows('jsonb_populate_record(null::change_requests, $9::jsonb)')} AND EXISTS (SELECT 1 FROM e)
        ON CONFLICT (cr_id) DO UPDATE SET ${setAll})
      SELECT * FROM e`,
    values: [
      p.streamId,
      p.streamType,
      p.projectId,
      p.expected,
      p.eventId,
      p.type,
      JSON.stringify(p.data),
      JSON.stringify(p.metadata),
      JSON.stringify(p.row),
    ],
  }),

  /**
   * The command path, for one or many CR streams at once (group commit): one statement,
   * one commit, each command with its own optimistic check. A command appends its event
   * and patches its row only if the row is still at `expected` and the stream too (a row
   * that is gone, its project deleted, takes no event); otherwise it stores nothing,
   * without affecting the others. The patch sets only the columns it names, so a close
   * sends and converts a few fields, not the whole row. Streams are locked in stream id
   * order, the same in every process. At most one command per stream (the caller
   * batches so); returns the stored events.
   *
   * The commands arrive as one JSON array, not as typed arrays: the planner cannot see
   * its length, so the plan it makes for one batch is the plan for every batch and the
   * prepared statement keeps one generic plan. With arrays it re-planned the statement on
   * every execution (its estimate followed each batch's size), at about half a
   * millisecond each.
   */
  appendAndPatch: (cmds: ProjectedAppend[]): Query => ({
    name: 'cr_append_and_patch',
    text: `WITH i AS MATERIALIZED (
        SELECT * FROM jsonb_to_recordset($1::jsonb) AS i(stream_id text, stream_type text, project_id uuid, expected bigint,
          event_id uuid, type text, data jsonb, metadata jsonb, cr_id uuid, patch jsonb, ord int)),
      s AS (
        INSERT INTO streams (stream_id, stream_type, project_id, version)
        SELECT i.stream_id, i.stream_type, i.project_id, i.expected + 1 FROM i
        WHERE (SELECT c.stream_version FROM change_requests c WHERE c.cr_id = i.cr_id AND c.project_id = i.project_id) = i.expected
        ORDER BY i.stream_id
        ON CONFLICT (stream_id) DO UPDATE
          SET version = streams.version + 1, updated_at = now()
          WHERE streams.version = EXCLUDED.version - 1
        RETURNING stream_id),
      e AS (
        INSERT INTO events (stream_id, stream_position, event_id, type, data, metadata, project_id)
        SELECT i.stream_id, i.expected + 1, i.event_id, i.type, i.data, i.metadata, i.project_id
        FROM i JOIN s ON s.stream_id = i.stream_id
        ORDER BY i.ord
        RETURNING ${EVENT_COLUMNS}),
      p AS (
        UPDATE change_requests c SET ${setFromPatch}
        FROM i JOIN s ON s.stream_id = i.stream_id
        WHERE c.cr_id = i.cr_id)
      SELECT * FROM e`,
    values: [
      JSON.stringify(
        cmds.map((c, ord) => ({
          stream_id: c.streamId,
          stream_type: c.streamType,
          project_id: c.projectId,
          expected: c.expected,
          event_id: c.eventId,
          type: c.type,
          data: c.data,
          metadata: c.metadata,
          cr_id: c.crId,
          patch: c.patch,
          ord,
        })),
      ),
    ],
  }),

  insertMany: (table: CrTable, rows: object[]): Query => ({
    text: `INSERT INTO ${table} ${guardedRows('jsonb_populate_recordset(null::change_requests, $1::jsonb)')}`,
    values: [JSON.stringify(rows)],
  }),

  byId: (projectId: string, crId: string): Query => ({
    name: 'cr_by_id',
    text: `SELECT ${selectCols} FROM change_requests WHERE project_id = $1 AND cr_id = $2`,
    values: [projectId, crId],
  }),

  /**
   * Many rows by id at once (the command path's grouped read); rows of other projects are
   * not returned. The ids arrive as one JSON array, for one generic plan (as `appendAndPatch`).
   */
  byIds: (pairs: { projectId: string; crId: string }[]): Query => ({
    name: 'cr_by_ids',
    text: `SELECT ${selectCols} FROM change_requests c
      WHERE (c.project_id, c.cr_id) IN (SELECT x.project_id, x.cr_id FROM jsonb_to_recordset($1::jsonb) AS x(project_id uuid, cr_id uuid))`,
    values: [JSON.stringify(pairs.map((p) => ({ project_id: p.projectId, cr_id: p.crId })))],
  }),

  byNumber: (projectId: string, number: number): Query => ({
    name: 'cr_by_number',
    text: `SELECT ${selectCols} FROM change_requests WHERE project_id = $1 AND number = $2`,
    values: [projectId, number],
  }),

  /** Newest first. `status` null: all. `before`: only numbers below it (the cursor). */
  list: (projectId: string, status: string | null, limit: number, before: number | null = null): Query => ({
    name: 'cr_list_page',
    text: `SELECT ${selectCols} FROM change_requests
      WHERE project_id = $1 AND ($2::cr_status IS NULL OR status = $2::cr_status)
        AND ($4::int IS NULL OR number < $4::int)
      ORDER BY number DESC LIMIT $3`,
    values: [projectId, status, limit, before],
  }),

  /**
   * A list's refreshes: several CRs' single events appended and their rows rewritten, in
   * one statement (one round trip): each stream moves from its expected version only if it is still there;
   * the others are skipped (their next read decides again). Returns the stored events.
   */
  appendRefreshesAndProject: (projectId: string, items: { streamId: string; expected: number; eventId: string; type: string; data: unknown; metadata: unknown; row: object }[]): Query => ({
    text: `WITH input AS (
        SELECT * FROM jsonb_to_recordset($2::jsonb)
          AS x(stream_id text, expected bigint, event_id uuid, type text, data jsonb, metadata jsonb, row jsonb)),
      s AS (
        UPDATE streams st SET version = st.version + 1, updated_at = now()
        FROM input i WHERE st.stream_id = i.stream_id AND st.version = i.expected
        RETURNING st.stream_id),
      e AS (
        INSERT INTO events (stream_id, stream_position, event_id, type, data, metadata, project_id)
        SELECT i.stream_id, i.expected + 1, i.event_id, i.type, i.data, i.metadata, $1
        FROM input i JOIN s USING (stream_id)
        ORDER BY i.stream_id
        RETURNING stream_id, stream_position),
      p AS (
        INSERT INTO change_requests
        ${guardedRows('(SELECT (jsonb_populate_record(null::change_requests, i.row)).* FROM input i JOIN s USING (stream_id))')}
        ON CONFLICT (cr_id) DO UPDATE SET ${setAll})
      SELECT stream_id, stream_position FROM e`,
    values: [
      projectId,
      JSON.stringify(
        items.map((i) => ({ stream_id: i.streamId, expected: i.expected, event_id: i.eventId, type: i.type, data: i.data, metadata: i.metadata, row: i.row })),
      ),
    ],
  }),

  /** Allocates the next per-project number; the row lock holds until the transaction ends. */
  nextNumber: (projectId: string): Query => ({
    name: 'cr_next_number',
    text: `INSERT INTO project_counters (project_id, last_cr_number) VALUES ($1, 1)
      ON CONFLICT (project_id) DO UPDATE SET last_cr_number = project_counters.last_cr_number + 1
      RETURNING last_cr_number AS number`,
    values: [projectId],
  }),

  createScratch: (): Query => ({
    text: 'CREATE TEMP TABLE cr_rebuilt (LIKE change_requests INCLUDING DEFAULTS) ON COMMIT DROP',
    values: [],
  }),

  /** Rows that differ between the live table and the rebuilt one, from both sides. */
  diffScratch: (limit: number): Query => ({
    text: `(SELECT 'live_only' AS side, l.cr_id FROM (TABLE change_requests EXCEPT TABLE cr_rebuilt) l)
      UNION ALL
      (SELECT 'rebuilt_only' AS side, r.cr_id FROM (TABLE cr_rebuilt EXCEPT TABLE change_requests) r)
      LIMIT $1`,
    values: [limit],
  }),

  deleteAll: (): Query => ({ text: 'DELETE FROM change_requests', values: [] }),
  copyScratchToLive: (): Query => ({ text: 'INSERT INTO change_requests TABLE cr_rebuilt', values: [] }),
};
