import type { Executor } from '../infra/db/db.js';
import type { ChangeRequest } from '../domain/change-request/index.js';
import { crQueries } from '../sql/queries/change-requests.js';

/**
 * The inline side of the `change_requests` projection, written in the append's
 * transaction (or statement). A row is a pure function of its CR stream: the folded
 * state plus the stream version. The rebuild (projections/) folds with the same `toRow`,
 * so `rebuild --verify` compares like with like. Dependencies point one way:
 * projections/ imports this module; nothing in infra/ imports projections/.
 */
export interface CrRow extends ChangeRequest {
  stream_version: number;
}

export const toRow = (state: ChangeRequest, version: number): CrRow => ({ ...state, stream_version: version });

/** Inline: called in the append transaction with the state after the new events. */
export async function projectChangeRequest(tx: Executor, state: ChangeRequest, version: number): Promise<void> {
  await tx.run(crQueries.upsert(toRow(state, version)));
}

const iso = (v: unknown): string | null => (v === null || v === undefined ? null : new Date(v as string).toISOString());

/** A row read from Postgres back into domain state (Dates to ISO strings). */
export function fromRow(row: Record<string, unknown>): CrRow {
  const r = row as unknown as CrRow;
  return {
    ...r,
    merged_at: iso(r.merged_at),
    closed_at: iso(r.closed_at),
    created_at: iso(r.created_at)!,
    updated_at: iso(r.updated_at)!,
    stream_version: Number(r.stream_version),
  };
}

const same = (a: unknown, b: unknown): boolean =>
  a === b || (typeof a === 'object' && a !== null && typeof b === 'object' && b !== null && JSON.stringify(a) === JSON.stringify(b));

/**
 * What turns row `prev` into row `next`: the columns whose values differ, and the stream
 * version always. Applied over the stored row at `prev.stream_version` (which equals
 * `prev`, the fold of the stream up to there), it yields exactly `next`.
 */
export function rowPatch(prev: CrRow, next: CrRow): Partial<CrRow> {
  const patch: Record<string, unknown> = { stream_version: next.stream_version };
  const before = prev as unknown as Record<string, unknown>;
  const after = next as unknown as Record<string, unknown>;
  for (const k of new Set([...Object.keys(before), ...Object.keys(after)])) {
    if (!same(after[k] ?? null, before[k] ?? null)) patch[k] = after[k] ?? null;
  }
  return patch as Partial<CrRow>;
}
