import type { StoredEvent } from '../infra/event-store.js';
import { evolve, parseChangeRequestEvent, STREAM_TYPE, type ChangeRequest, type CrState } from '../domain/change-request/index.js';
import type { CrRow } from '../sql/queries/change-request-row.js';

/**
 * The `change_requests` projection. A row is a pure function of its CR stream: the folded
 * state plus the stream version (`toRow`). The command path writes it inline, in the
 * statement that appends the events (sql/queries/change-requests.ts); the rebuild folds
 * the log with the same `toRow`, so `rebuild --verify` compares like with like. The row's
 * columns and their encoding live in sql/queries/change-request-row.ts.
 */
export type { CrRow };

export const toRow = (state: ChangeRequest, version: number): CrRow => ({ ...state, stream_version: version });

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
