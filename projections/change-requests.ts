import type { StoredEvent } from '../infra/event-store.js';
import type { Projection, RowSource, StreamRef } from '../infra/event-sourcing/port.js';
import { evolve, parseChangeRequestEvent, STREAM_TYPE, streamIdOf, type ChangeRequest, type CrChecks, type CrState } from '../domain/change-request/index.js';
import { crOfRow, crRowPatch, decodeCrRow, encodeCrRow, type CrRow } from '../sql/queries/change-request-row.js';
import { crPatchExtension, crQueries, crUpsertExtension } from '../sql/queries/change-requests.js';

/**
 * The `change_requests` projection, in one place. A row is a pure function of its CR
 * stream: the folded state plus the stream version (`toRow`). The command handler writes
 * it inline, fused into the statement that appends the events (`crProjection`: the whole
 * row, or a patch of the row decided on); the rebuild folds the log with the same `toRow`,
 * so `rebuild --verify` compares like with like. The row's columns and their encoding live
 * in sql/queries/change-request-row.ts, the statements' SQL in sql/queries/change-requests.ts.
 */
export type { CrRow };

export const toRow = (state: ChangeRequest, version: number): CrRow => ({ ...state, stream_version: version });

/** A CR's stream, as the command handler takes it. */
export const crStream = (projectId: string, crId: string): StreamRef => {
  const id = streamIdOf(crId);
  return { id, type: STREAM_TYPE, projectId, key: `${projectId}/${id}` };
};

const crIdOfStream = (s: StreamRef) => s.id.slice('cr-'.length);

/** The CR's row per stream: what the handler decides on in `load: 'row'`, and caches. */
export const crRows: RowSource<CrState, CrRow> = {
  toRow: (state, version) => toRow(state!, version),
  stateOf: crOfRow,
  versionOf: (r) => r.stream_version,
  read: (s) => crQueries.byId(s.projectId!, crIdOfStream(s)),
  readMany: (ss) => crQueries.byIds(ss.map((s) => ({ projectId: s.projectId!, crId: crIdOfStream(s) }))),
  decode: decodeCrRow,
  keyOf: (raw) => `${String(raw.project_id)}/${streamIdOf(String(raw.cr_id))}`,
  patch: { name: 'cr_append_patch', extension: crPatchExtension, encode: ({ prev, next }) => ({ cr_id: next.cr_id, patch: crRowPatch(prev, next) }) },
};

/** The projection of the CR aggregate's writes. */
export const crProjection: Projection<CrState> = {
  fused: { name: 'cr_append_upsert', extension: crUpsertExtension, encode: ({ state, version }) => ({ row: encodeCrRow(toRow(state!, version)) }) },
  rows: crRows,
};

/** The same row, written by the checks' writes (their state is the CR with its checks). */
export const crChecksProjection: Projection<CrChecks> = {
  fused: { name: 'cr_append_upsert', extension: crUpsertExtension, encode: ({ state, version }) => ({ row: encodeCrRow(toRow(state!.cr, version)) }) },
};

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
