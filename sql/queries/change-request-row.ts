import type { ChangeRequest } from '../../domain/change-request/index.js';

/**
 * The `change_requests` row, in one place: its columns and their SQL types, how a row is
 * encoded for a statement (one JSON object per row, keyed by column) and decoded from a
 * result, and what a change to it is (a patch). Every CR statement builds its column
 * lists from here; every caller reads rows through `decodeCrRow`.
 */

/** A CR's row: its folded state plus the version of its stream that state reflects. */
export interface CrRow extends ChangeRequest {
  stream_version: number;
}

/** Every column, in table order, with its SQL type. Checked against `CrRow` both ways. */
export const CR_COLUMNS = {
  cr_id: 'uuid',
  account_id: 'uuid',
  project_id: 'uuid',
  number: 'integer',
  title: 'text',
  description: 'text',
  base_ref: 'text',
  head_ref: 'text',
  status: 'cr_status',
  head_commit_sha: 'text',
  base_commit_sha: 'text',
  origin_session_id: 'text',
  created_by: 'uuid',
  merged_at: 'timestamptz',
  merged_by: 'uuid',
  merge_commit_sha: 'text',
  closed_at: 'timestamptz',
  closed_by: 'uuid',
  metadata: 'jsonb',
  created_at: 'timestamptz',
  updated_at: 'timestamptz',
  stream_version: 'bigint',
  // Added after the table was made (sql/190_cr_stacks.sql): a new column comes last.
  parent_cr_id: 'uuid',
} as const satisfies Record<keyof CrRow, string>;

export type CrColumn = keyof typeof CR_COLUMNS;

export const CR_COLUMN_NAMES = Object.keys(CR_COLUMNS) as CrColumn[];

/** A row as statements take it: column -> JSON value (times as ISO strings). */
export type EncodedCrRow = Record<CrColumn, unknown>;

/** The row as one JSON object with exactly the table's columns. */
export function encodeCrRow(row: CrRow): EncodedCrRow {
  const out = {} as EncodedCrRow;
  for (const c of CR_COLUMN_NAMES) out[c] = row[c] ?? null;
  return out;
}

const iso = (v: unknown): string | null => (v === null || v === undefined ? null : new Date(v as string).toISOString());

/** A result row back into a `CrRow` (times to ISO strings, the version to a number). */
export function decodeCrRow(r: Record<string, unknown>): CrRow {
  const out: Record<string, unknown> = {};
  for (const c of CR_COLUMN_NAMES) {
    const t = CR_COLUMNS[c];
    out[c] = t === 'timestamptz' ? iso(r[c]) : t === 'bigint' ? Number(r[c]) : r[c];
  }
  return out as unknown as CrRow;
}

/** The CR a row holds (its state without the stream version). */
export function crOfRow(row: CrRow): ChangeRequest {
  const { stream_version: _v, ...cr } = row;
  return cr;
}

const same = (a: unknown, b: unknown): boolean =>
  a === b || (typeof a === 'object' && a !== null && typeof b === 'object' && b !== null && JSON.stringify(a) === JSON.stringify(b));

/**
 * What turns row `prev` into row `next`: the columns whose values differ, and the stream
 * version always. Applied over the stored row at `prev.stream_version` (which equals
 * `prev`, the fold of the stream up to there), it yields exactly `next`.
 */
export function crRowPatch(prev: CrRow, next: CrRow): Partial<EncodedCrRow> {
  const patch: Partial<EncodedCrRow> = { stream_version: next.stream_version };
  for (const c of CR_COLUMN_NAMES) {
    if (!same(next[c] ?? null, prev[c] ?? null)) patch[c] = next[c] ?? null;
  }
  return patch;
}

// --- SQL built from the column table ---------------------------------------------------

/** Explicit columns, never `*`: a prepared `*` breaks when a migration adds a column. */
export const crSelectList = CR_COLUMN_NAMES.join(', ');

/** `SET` of every column but the key from the row proposed for insertion. */
export const crSetAll = CR_COLUMN_NAMES.filter((c) => c !== 'cr_id')
  .map((c) => `${c} = EXCLUDED.${c}`)
  .join(', ');

/**
 * `SET` of every column but the key from the JSON patch `<patch>` when it names the
 * column, kept (`c.<column>`) otherwise: a key lookup per column and a conversion only
 * for what changed.
 */
export const crSetFromPatch = (patch: string): string =>
  CR_COLUMN_NAMES.filter((c) => c !== 'cr_id')
    .map((c) => {
      const value = CR_COLUMNS[c] === 'jsonb' ? `${patch} -> '${c}'` : `(${patch} ->> '${c}')::${CR_COLUMNS[c]}`;
      return `${c} = CASE WHEN ${patch} ? '${c}' THEN ${value} ELSE c.${c} END`;
    })
    .join(',\n          ');

/**
 * Rows from `source` (typed as the table's own row type, alias `r`) as they may be
 * written: a row whose project is gone is not written (the project's deletion cascaded it
 * away), and an origin session that no longer exists is written as null, exactly as the
 * foreign keys would have left it.
 */
export const crGuardedRows = (source: string): string => `
  SELECT ${CR_COLUMN_NAMES.map((c) =>
    c === 'origin_session_id'
      ? 'CASE WHEN EXISTS (SELECT 1 FROM project_sessions s WHERE s.session_id = r.origin_session_id) THEN r.origin_session_id END'
      : `r.${c}`,
  ).join(', ')}
  FROM ${source} r
  WHERE EXISTS (SELECT 1 FROM projects p WHERE p.project_id = r.project_id)`;
