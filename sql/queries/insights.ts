import type { Query } from '../query.js';

/**
 * The insights projection (migration 210, projections/insights.ts) and the reads of the
 * insights service (services/insights/). Group keys are chosen from a fixed map, never
 * from the request's text.
 */
export interface InsightSessionRow {
  session_id: string;
  project_id: string;
  account_id: string;
  agent: string;
  model: string | null;
  trigger: string | null;
  person: string;
  ended: boolean;
}
export interface InsightCrRow {
  cr_id: string;
  project_id: string;
  account_id: string;
  session_id: string | null;
  agent: string | null;
  model: string | null;
  trigger: string | null;
  person: string;
  opened_at: string;
}
export interface InsightRunRow {
  run_id: string;
  cr_id: string;
  name: string;
  first: boolean;
}
export interface InsightFactRow {
  global_position: number;
  kind: 'opened' | 'merged' | 'closed' | 'round' | 'check_failed_first' | 'ejected' | 'session_ended';
  weight: number;
  project_id: string;
  account_id: string;
  cr_id: string | null;
  session_id: string | null;
  agent: string | null;
  model: string | null;
  trigger: string | null;
  person: string | null;
  seconds: number | null;
  recorded_at: string;
}

/** The tables the folder writes rows of; `insight_buckets` is summed from the facts. */
export type InsightRowTable = 'insight_sessions' | 'insight_crs' | 'insight_check_runs' | 'insight_facts';
export type InsightTable = InsightRowTable | 'insight_buckets';
export const INSIGHT_ROW_TABLES: readonly InsightRowTable[] = ['insight_sessions', 'insight_crs', 'insight_check_runs', 'insight_facts'];
const INSIGHT_TABLES: readonly InsightTable[] = [...INSIGHT_ROW_TABLES, 'insight_buckets'];
const KEY: Record<InsightTable, string> = {
  insight_sessions: 'session_id',
  insight_crs: 'cr_id::text',
  insight_check_runs: 'run_id::text',
  insight_facts: 'global_position::text',
  insight_buckets: `project_id::text || ' ' || span || ' ' || start::text || ' ' || kind`,
};

/** Facts summed per UTC hour and per UTC minute, by group (what insight_buckets holds). */
const BUCKETS_OF = (facts: string) => `SELECT f.project_id, f.account_id, s.span, date_trunc(s.span, f.recorded_at, 'UTC') AS start, f.kind, f.agent, f.model, f.trigger, f.person, sum(f.weight)::int AS n
  FROM ${facts} f CROSS JOIN (VALUES ('hour'), ('minute')) s (span) GROUP BY 1, 2, 3, 4, 5, 6, 7, 8, 9`;

/** What a group_by names, as a column of the facts (f) and of usage joined to its session (u, s). */
export type GroupBy = 'agent' | 'model' | 'trigger' | 'person' | 'week';
const FACT_KEY: Record<GroupBy | 'none', string> = {
  none: 'NULL::text',
  agent: 'f.agent',
  model: 'f.model',
  trigger: 'f.trigger',
  person: 'f.person::text',
  week: `to_char(date_trunc('week', f.recorded_at AT TIME ZONE 'UTC'), 'YYYY-MM-DD')`,
};
const HOUR_KEY: Record<GroupBy | 'none', string> = {
  none: 'NULL::text',
  agent: 'agent',
  model: 'model',
  trigger: 'trigger',
  person: 'person::text',
  week: `to_char(date_trunc('week', at AT TIME ZONE 'UTC'), 'YYYY-MM-DD')`,
};
const USAGE_KEY: Record<GroupBy | 'none', string> = {
  none: 'NULL::text',
  agent: 's.agent',
  model: 'u.model',
  trigger: 's.trigger',
  person: 's.person::text',
  week: `to_char(date_trunc('week', u.created_at AT TIME ZONE 'UTC'), 'YYYY-MM-DD')`,
};

/**
 * A window as the reads take it: [lo, hi) of recorded times (hi: `to`, or just after as_of
 * when that is earlier), cut into segments each read from one source.
 */
export interface Edges {
  lo: Date;
  hi: Date;
}
export interface Segment {
  source: 'hour' | 'minute' | 'facts';
  from: Date;
  to: Date;
}

export interface InsightWindow {
  scope: 'project' | 'account';
  id: string;
  from: Date;
  to: Date;
  asOf: Date;
  groupBy: GroupBy | null;
}

const scopeColumn = (w: InsightWindow) => (w.scope === 'project' ? 'project_id' : 'account_id');

export const insightQueries = {
  checkpoint: (): Query => ({
    name: 'insight_checkpoint',
    text: 'SELECT txid::text AS txid, position::float8 AS position FROM insight_checkpoint',
    values: [],
  }),
  /** Whether the log holds an event past the checkpoint that a catch-up may read now: one statement, no transaction. */
  anythingNew: (): Query => ({
    name: 'insight_anything_new',
    text: `SELECT 1 AS one FROM insight_checkpoint c JOIN LATERAL (
        SELECT 1 FROM events e
        WHERE (e.transaction_id, e.global_position) > (c.txid, c.position)
          AND e.transaction_id < pg_snapshot_xmin(pg_current_snapshot())
        ORDER BY e.transaction_id, e.global_position LIMIT 1) n ON true`,
    values: [],
  }),
  setCheckpoint: (at: { txid: string; position: number }): Query => ({
    text: 'UPDATE insight_checkpoint SET txid = $1::xid8, position = $2',
    values: [at.txid, at.position],
  }),
  /**
   * The next page of the log after `after`, commit-safe (only transactions older than every
   * one still running, as the feed reads), `upTo`: no further than this checkpoint (a
   * verify replays exactly what the live rows reflect). The data of types the projection
   * does not read is left out (`onlyTypes`: those events too: a rebuild, which needs no
   * position past the last event it reads).
   */
  pageAfter: (after: { txid: string; position: number }, limit: number, types: readonly string[], opts: { commitSafe: boolean; upTo?: { txid: string; position: number }; onlyTypes?: boolean }): Query => ({
    text: `SELECT global_position::float8 AS global_position, transaction_id::text AS txid, stream_id, type,
        CASE WHEN type = ANY($4::text[]) THEN data END AS data, project_id::text,
        to_char(date_trunc('milliseconds', recorded_at) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS recorded_at
      FROM events
      WHERE (transaction_id, global_position) > ($1::xid8, $2::bigint)
        ${opts.commitSafe ? 'AND transaction_id < pg_snapshot_xmin(pg_current_snapshot())' : ''}
        ${opts.upTo ? 'AND (transaction_id, global_position) <= ($5::xid8, $6::bigint)' : ''}
        ${opts.onlyTypes ? 'AND type = ANY($4::text[])' : ''}
      ORDER BY events.transaction_id, events.global_position
      LIMIT $3`,
    values: [after.txid, after.position, limit, types, ...(opts.upTo ? [opts.upTo.txid, opts.upTo.position] : [])],
  }),
  sessionsByIds: (ids: string[]): Query => ({
    text: 'SELECT * FROM insight_sessions WHERE session_id = ANY($1::text[])',
    values: [ids],
  }),
  crsByIds: (ids: string[]): Query => ({
    text: `SELECT cr_id::text, project_id::text, account_id::text, session_id, agent, model, trigger, person::text,
        to_char(opened_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') AS opened_at
      FROM insight_crs WHERE cr_id = ANY($1::uuid[])`,
    values: [ids],
  }),
  runsByIds: (ids: string[]): Query => ({
    text: 'SELECT run_id::text, cr_id::text, name, first FROM insight_check_runs WHERE run_id = ANY($1::uuid[])',
    values: [ids],
  }),
  /** Of (cr, name) pairs as `cr_id/name`, those that already have a run. */
  namesWithRuns: (crIds: string[]): Query => ({
    text: `SELECT DISTINCT cr_id::text || '/' || name AS pair FROM insight_check_runs WHERE cr_id = ANY($1::uuid[])`,
    values: [crIds],
  }),
  upsert: (table: InsightRowTable | `${InsightRowTable}_rebuilt`, rows: object[]): Query => {
    const live = table.replace(/_rebuilt$/, '') as InsightRowTable;
    const key = KEY[live].replace(/::text$/, '');
    const cols: Record<InsightRowTable, string[]> = {
      insight_sessions: ['ended'],
      insight_crs: [],
      insight_check_runs: [],
      insight_facts: [],
    };
    const set = cols[live].map((c) => `${c} = EXCLUDED.${c}`).join(', ');
    return {
      // Scratch rows are written once each (and their tables have no index to conflict on).
      text: `INSERT INTO ${table} SELECT * FROM jsonb_populate_recordset(null::${live}, $1::jsonb)
        ${table === live ? `ON CONFLICT (${key}) DO ${set ? `UPDATE SET ${set}` : 'NOTHING'}` : ''}`,
      values: [JSON.stringify(rows)],
    };
  },
  /** New facts added to their hours and minutes (the catch-up, in the facts' transaction). */
  addToBuckets: (facts: object[]): Query => ({
    text: `INSERT INTO insight_buckets ${BUCKETS_OF('jsonb_populate_recordset(null::insight_facts, $1::jsonb)')}
      ON CONFLICT (project_id, span, start, kind, agent, model, trigger, person) DO UPDATE SET n = insight_buckets.n + EXCLUDED.n`,
    values: [JSON.stringify(facts)],
  }),
  /** The rebuild's buckets, summed from its facts. */
  bucketsOfScratch: (): Query => ({ text: `INSERT INTO insight_buckets_rebuilt ${BUCKETS_OF('insight_facts_rebuilt')}`, values: [] }),
  createScratch: (): Query => ({
    // No indexes: the scratch rows are written once and compared whole (EXCEPT), never looked up.
    text: INSIGHT_TABLES.map((t) => `CREATE TEMP TABLE ${t}_rebuilt (LIKE ${t} INCLUDING DEFAULTS) ON COMMIT DROP`).join(';\n'),
    values: [],
  }),
  diffScratch: (limit: number): Query => ({
    text: `${INSIGHT_TABLES.map(
      (t) => `(SELECT 'live_only' AS side, '${t}' AS "table", (l.${KEY[t]}) AS id FROM (TABLE ${t} EXCEPT TABLE ${t}_rebuilt) l)
      UNION ALL
      (SELECT 'rebuilt_only', '${t}', (r.${KEY[t]}) FROM (TABLE ${t}_rebuilt EXCEPT TABLE ${t}) r)`,
    ).join('\n      UNION ALL\n')}
      LIMIT $1`,
    values: [limit],
  }),
  replaceLive: (): Query => ({
    text: INSIGHT_TABLES.map((t) => `DELETE FROM ${t}; INSERT INTO ${t} TABLE ${t}_rebuilt`).join(';\n'),
    values: [],
  }),

  /**
   * Counts per group and in total (`total` true) of the facts recorded in [lo, hi): each
   * segment of the window from its source (whole hours, whole minutes, the facts at the edges).
   */
  counts: (w: InsightWindow, segments: Segment[]): Query => {
    const k = HOUR_KEY[w.groupBy ?? 'none'];
    const col = scopeColumn(w);
    const values: unknown[] = [w.id];
    const parts = segments.map((s) => {
      values.push(s.from, s.to);
      const [a, b] = [values.length - 1, values.length];
      return s.source === 'facts'
        ? `SELECT agent, model, trigger, person, recorded_at AS at, kind, weight AS n FROM insight_facts WHERE ${col} = $1 AND recorded_at >= $${a} AND recorded_at < $${b}`
        : `SELECT agent, model, trigger, person, start AS at, kind, n FROM insight_buckets WHERE ${col} = $1 AND span = '${s.source}' AND start >= $${a} AND start < $${b}`;
    });
    // An empty window (as_of before from): no rows, the total still answered.
    if (parts.length === 0) parts.push(`SELECT agent, model, trigger, person, recorded_at AS at, kind, weight AS n FROM insight_facts WHERE ${col} = $1 AND false`);
    return {
      text: `WITH c AS (${parts.join('\n      UNION ALL ')})
      SELECT ${k} AS key, grouping(${k}) = 1 AS total,
        coalesce(sum(n) FILTER (WHERE kind = 'opened'), 0)::int AS opened,
        coalesce(sum(n) FILTER (WHERE kind = 'merged'), 0)::int AS merged,
        coalesce(sum(n) FILTER (WHERE kind = 'closed'), 0)::int AS closed,
        coalesce(sum(n) FILTER (WHERE kind = 'round'), 0)::int AS rounds,
        coalesce(sum(n) FILTER (WHERE kind = 'check_failed_first'), 0)::int AS checks_failed_first,
        coalesce(sum(n) FILTER (WHERE kind = 'ejected'), 0)::int AS ejections
      FROM c
      GROUP BY GROUPING SETS ((${k}), ())`,
      values,
    };
  },

  /**
   * What counts cannot be summed from, from the facts themselves: the median time to merge,
   * and the sessions that ended without a CR (none opened from them by as_of).
   */
  mediansAndEnds: (w: InsightWindow, e: Edges): Query => ({
    text: `WITH f AS (
        SELECT f.kind, f.seconds, f.session_id, f.agent, f.model, f.trigger, f.person, f.recorded_at, (f.kind = 'session_ended' AND NOT EXISTS (SELECT 1 FROM insight_facts o
            WHERE o.kind = 'opened' AND o.session_id = f.session_id AND o.recorded_at <= $4)) AS without_cr
        FROM insight_facts f
        WHERE f.${scopeColumn(w)} = $1 AND f.kind IN ('merged', 'session_ended') AND f.recorded_at >= $2 AND f.recorded_at < $3)
      SELECT ${FACT_KEY[w.groupBy ?? 'none']} AS key, grouping(${FACT_KEY[w.groupBy ?? 'none']}) = 1 AS total,
        count(*) FILTER (WHERE without_cr)::int AS sessions_without_cr,
        percentile_cont(0.5) WITHIN GROUP (ORDER BY seconds) FILTER (WHERE kind = 'merged') AS median_seconds
      FROM f
      GROUP BY GROUPING SETS ((${FACT_KEY[w.groupBy ?? 'none']}), ())`,
    values: [w.id, e.lo, e.hi, w.asOf],
  }),

  /** Tokens and money of the model calls recorded in [lo, hi) (hi: `to`, or just after as_of), per group and currency. */
  usage: (w: InsightWindow, e: Edges): Query => ({
    text: `SELECT ${USAGE_KEY[w.groupBy ?? 'none']} AS key, grouping(${USAGE_KEY[w.groupBy ?? 'none']}) = 1 AS total, u.currency,
        sum(u.input_tokens)::float8 AS input_tokens, sum(u.output_tokens)::float8 AS output_tokens,
        count(*)::int AS calls, count(*) FILTER (WHERE u.cost IS NULL)::int AS unpriced_calls,
        round(sum(u.cost), 6)::float8 AS money
      FROM llm_usage u LEFT JOIN insight_sessions s ON s.session_id = u.session_id
      WHERE u.${scopeColumn(w)} = $1 AND u.created_at >= $2 AND u.created_at < $3
      GROUP BY GROUPING SETS ((${USAGE_KEY[w.groupBy ?? 'none']}, u.currency), (u.currency))`,
    values: [w.id, e.lo, e.hi],
  }),
};
