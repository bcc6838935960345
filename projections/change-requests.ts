import type { Executor } from '../infra/db/db.js';
import type { StoredEvent } from '../infra/event-store.js';
import {
  evolve,
  parseChangeRequestEvent,
  STREAM_TYPE,
  type ChangeRequest,
  type CrState,
} from '../domain/change-request/index.js';
import { crQueries } from '../sql/queries/change-requests.js';

/**
 * The `change_requests` projection. A row is a pure function of its CR stream: the folded
 * state plus the stream version. The inline projector and the rebuild both go through
 * `toRow`, so `rebuild --verify` compares like with like.
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

/** Folds CR events in log order, keeping one state per stream (rebuilds). */
export class ChangeRequestFolder {
  readonly streamType = STREAM_TYPE;
  private readonly states = new Map<string, { state: CrState; version: number }>();

  apply(e: StoredEvent): void {
    const prev = this.states.get(e.stream_id) ?? { state: null, version: 0 };
    this.states.set(e.stream_id, { state: evolve(prev.state, parseChangeRequestEvent(e)), version: e.stream_position });
  }

  rows(): CrRow[] {
    const out: CrRow[] = [];
    for (const { state, version } of this.states.values()) if (state) out.push(toRow(state, version));
    return out;
  }
}
