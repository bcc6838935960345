import type { Executor } from '../db/db.js';
import type { ChangeRequest } from '../../domain/change-request/index.js';
import { crQueries } from '../../sql/queries/change-requests.js';

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
