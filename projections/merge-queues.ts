import type { Executor } from '../infra/db/db.js';
import type { StoredEvent } from '../infra/event-store.js';
import type { Projection, StreamRef } from '../infra/event-sourcing/port.js';
import { evolve, MERGE_QUEUE_STREAM_TYPE, mergeQueueStreamId, parseMergeQueueEvent, type MergeQueueState, type MergeQueueStateOrNull } from '../domain/merge-queue/index.js';
import { mergeQueueQueries } from '../sql/queries/merge-queue.js';

/**
 * The `merge_queues` projection: one row per (project, base branch) queue, a pure function
 * of its stream (`toRow`), written in the append's transaction and replayed by the rebuild
 * with the same function.
 */
export const toRow = (s: MergeQueueState, version: number) => ({
  project_id: s.project_id,
  base_ref: s.base_ref,
  base_sha: s.base_sha,
  built: s.built,
  landing: s.landing,
  held: s.held,
  rebuilds: s.rebuilds,
  landed: s.landed,
  updated_at: s.updated_at,
  stream_version: version,
});

/** A queue's stream, as the command handler takes it. */
export const mergeQueueStream = (projectId: string, baseRef: string): StreamRef => ({ id: mergeQueueStreamId(projectId, baseRef), type: MERGE_QUEUE_STREAM_TYPE, projectId });

export async function projectMergeQueue(tx: Executor, s: MergeQueueState, version: number, table: 'merge_queues' | 'merge_queues_rebuilt' = 'merge_queues'): Promise<void> {
  await tx.run(mergeQueueQueries.upsert(toRow(s, version), table));
}

export const mergeQueueProjection: Projection<MergeQueueStateOrNull> = {
  project: (tx, s, version) => projectMergeQueue(tx, s!, version),
};

/** Folds queue events in log order, one state per stream (rebuilds). */
export class MergeQueueFolder {
  readonly streamType = MERGE_QUEUE_STREAM_TYPE;
  private readonly states = new Map<string, { state: MergeQueueStateOrNull; version: number }>();

  apply(e: StoredEvent): void {
    const prev = this.states.get(e.stream_id) ?? { state: null, version: 0 };
    this.states.set(e.stream_id, { state: evolve(prev.state, parseMergeQueueEvent(e)), version: e.stream_position });
  }

  async writeTo(tx: Executor): Promise<number> {
    let n = 0;
    for (const { state, version } of this.states.values()) {
      if (!state) continue;
      await projectMergeQueue(tx, state, version, 'merge_queues_rebuilt');
      n++;
    }
    return n;
  }
}
