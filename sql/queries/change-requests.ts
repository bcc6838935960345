import type { Query } from '../query.js';
import type { AppendExtension } from './events.js';
import { crGuardedRows, crSelectList, crSetAll, crSetFromPatch, encodeCrRow, type CrRow } from './change-request-row.js';
import { advisoryLockQueries } from './advisory-locks.js';

/** The tables a CR row can be written to: the live projection or a rebuild's scratch copy. */
type CrTable = 'change_requests' | 'cr_rebuilt';

/**
 * The CR projection as extensions of the one append statement (`appendStatement`, built by
 * the command handler's store): the row is written in the statement that appends its
 * events, only for the streams that moved. Each append carries its whole row (`row`).
 */
export const crUpsertExtension: AppendExtension = {
  columns: 'row jsonb',
  ctes: `p AS (
        INSERT INTO change_requests
        ${crGuardedRows('(SELECT (jsonb_populate_record(null::change_requests, i.row)).* FROM i JOIN s ON s.stream_id = i.stream_id)')}
        ON CONFLICT (cr_id) DO UPDATE SET ${crSetAll})`,
};

/**
 * The command path's: each append also needs its row still at `expected` (a row that is
 * gone, its project deleted, takes no event), and patches it (`cr_id`, `patch`): the
 * patch sets only the columns it names, so a close sends and converts a few fields, not
 * the whole row.
 */
export const crPatchExtension: AppendExtension = {
  columns: 'cr_id uuid, patch jsonb',
  guard: '(SELECT c.stream_version FROM change_requests c WHERE c.cr_id = i.cr_id AND c.project_id = i.project_id) = i.expected',
  ctes: `p AS (
        UPDATE change_requests c SET ${crSetFromPatch('i.patch')}
        FROM i JOIN s ON s.stream_id = i.stream_id
        WHERE c.cr_id = i.cr_id)`,
};

export const crQueries = {
  insertMany: (table: CrTable, rows: CrRow[]): Query => ({
    // Columns named: a column added by a later migration sits wherever the install's
    // migration order put it.
    text: `INSERT INTO ${table} (${crSelectList}) ${crGuardedRows('jsonb_populate_recordset(null::change_requests, $1::jsonb)')}`,
    values: [JSON.stringify(rows.map(encodeCrRow))],
  }),

  byId: (projectId: string, crId: string): Query => ({
    name: 'cr_by_id',
    text: `SELECT ${crSelectList} FROM change_requests WHERE project_id = $1 AND cr_id = $2`,
    values: [projectId, crId],
  }),

  /**
   * Many rows by id at once (the command path's grouped read); rows of other projects are
   * not returned. The ids arrive as one JSON array, for one generic plan (as the appends).
   */
  byIds: (pairs: { projectId: string; crId: string }[]): Query => ({
    name: 'cr_by_ids',
    text: `SELECT ${crSelectList} FROM change_requests c
      WHERE (c.project_id, c.cr_id) IN (SELECT x.project_id, x.cr_id FROM jsonb_to_recordset($1::jsonb) AS x(project_id uuid, cr_id uuid))`,
    values: [JSON.stringify(pairs.map((p) => ({ project_id: p.projectId, cr_id: p.crId })))],
  }),

  /** Number, title and status of some CRs of a project (the merge queue names the CRs ahead of a conflict). */
  numbersOf: (projectId: string, crIds: string[]): Query => ({
    name: 'cr_numbers_of',
    text: `SELECT c.cr_id::text AS cr_id, c.number, c.title, c.status::text AS status FROM change_requests c
      WHERE c.project_id = $1 AND c.cr_id = ANY($2::uuid[]) ORDER BY c.number`,
    values: [projectId, crIds],
  }),

  /**
   * The row as one JSON field (`cr`, decoded by `decodeCrRow` like the columns): the read of
   * a CR by number, the one most requests make, parses one field instead of twenty-two.
   */
  byNumber: (projectId: string, number: number): Query => ({
    name: 'cr_by_number',
    text: 'SELECT to_json(c) AS cr FROM change_requests c WHERE c.project_id = $1 AND c.number = $2',
    values: [projectId, number],
  }),

  /** Newest first. `status` null: all. `before`: only numbers below it (the cursor). */
  list: (projectId: string, status: string | null, limit: number, before: number | null = null): Query => ({
    name: 'cr_list_page',
    text: `SELECT ${crSelectList} FROM change_requests
      WHERE project_id = $1 AND ($2::cr_status IS NULL OR status = $2::cr_status)
        AND ($4::int IS NULL OR number < $4::int)
      ORDER BY number DESC LIMIT $3`,
    values: [projectId, status, limit, before],
  }),

  /**
   * The project's open CRs as the stack rules need them (domain/change-request/stack.ts):
   * read in the transaction that decides a parent.
   */
  stackNodes: (projectId: string): Query => ({
    name: 'cr_stack_nodes',
    text: `SELECT cr_id, number, head_ref, base_ref, parent_cr_id FROM change_requests
      WHERE project_id = $1 AND status = 'open' ORDER BY number`,
    values: [projectId],
  }),

  /** The CRs recorded as stacked on any of `parentIds` (every status), oldest first. */
  childrenOf: (projectId: string, parentIds: string[]): Query => ({
    name: 'cr_children_of',
    text: `SELECT ${crSelectList} FROM change_requests
      WHERE project_id = $1 AND parent_cr_id = ANY($2::uuid[]) ORDER BY number`,
    values: [projectId, parentIds],
  }),

  /**
   * The read by number with the CR's family beside it (the dashboard's CR page, in its
   * one read of the CR): its parent, when it has one, and the CRs stacked on it, `rel`
   * saying which.
   */
  byNumberWithFamily: (projectId: string, number: number): Query => ({
    name: 'cr_by_number_with_family',
    text: `SELECT to_json(c) AS cr,
        (SELECT coalesce(json_agg(json_build_object('rel', CASE WHEN k.cr_id = c.parent_cr_id THEN 'parent' ELSE 'child' END,
            'cr_id', k.cr_id, 'number', k.number, 'title', k.title, 'status', k.status, 'head_ref', k.head_ref, 'base_ref', k.base_ref) ORDER BY k.number), '[]'::json)
          FROM change_requests k WHERE k.project_id = c.project_id AND (k.parent_cr_id = c.cr_id OR k.cr_id = c.parent_cr_id)) AS family
      FROM change_requests c WHERE c.project_id = $1 AND c.number = $2`,
    values: [projectId, number],
  }),

  /** A CR's family by uuid: its parent, when it has one, and the CRs stacked on it. */
  family: (projectId: string, crId: string, parentId: string | null): Query => ({
    name: 'cr_family',
    text: `SELECT CASE WHEN cr_id = $3::uuid THEN 'parent' ELSE 'child' END AS rel, cr_id, number, title, status, head_ref, base_ref
      FROM change_requests
      WHERE project_id = $1 AND (parent_cr_id = $2::uuid OR cr_id = $3::uuid)
      ORDER BY number`,
    values: [projectId, crId, parentId],
  }),

  /** Held to the transaction's end: opens and retargets of one project decide stack parents one at a time. */
  lockStacks: (projectId: string): Query => advisoryLockQueries.xactLock(`cr-stacks:${projectId}`),

  /** Allocates the next per-project number; the row lock holds until the transaction ends. */
  /**
   * A CR's events in order with the acting person's name (one statement: the page's
   * statement budget): `metadata.actor` is a user id for people and their agents.
   */
  history: (streamId: string): Query => ({
    text: `SELECT e.stream_position, e.global_position, e.type, e.data, e.metadata, e.recorded_at,
        coalesce(nullif(u.name, ''), u.email) AS actor_name
      FROM events e
      LEFT JOIN users u ON u.user_id = CASE WHEN e.metadata->>'actor' ~ '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'
        THEN (e.metadata->>'actor')::uuid END
      WHERE e.stream_id = $1
      ORDER BY e.stream_position`,
    values: [streamId],
  }),

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
