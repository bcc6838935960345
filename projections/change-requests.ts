import type { StoredEvent } from '../infra/event-store.js';
import { evolve, parseChangeRequestEvent, STREAM_TYPE, type CrState } from '../domain/change-request/index.js';
import { toRow, type CrRow } from './change-request-row.js';

/**
 * The `change_requests` projection, replayed. The inline projector lives with the command
 * path (projections/change-request-row.ts); both go through `toRow`.
 */

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
