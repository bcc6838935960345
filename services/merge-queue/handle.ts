import type { Db, Executor } from '../../infra/db/db.js';
import { readStream } from '../../infra/event-store.js';
import { handle } from '../../infra/event-sourcing/handler.js';
import { pgStore } from '../../infra/event-sourcing/pg-store.js';
import type { EventStore } from '../../infra/event-sourcing/port.js';
import { fold, mergeQueueDecider, mergeQueueStreamId, parseMergeQueueEvent, type MergeQueueCommand, type MergeQueueStateOrNull } from '../../domain/merge-queue/index.js';
import { mergeQueueProjection, mergeQueueStream } from '../../projections/merge-queues.js';

/** The queue's state folded from its stream (null: the queue never built anything). */
export async function loadQueue(db: Executor, projectId: string, baseRef: string, opts: { asOf?: Date } = {}): Promise<MergeQueueStateOrNull> {
  const events = await readStream(db, mergeQueueStreamId(projectId, baseRef), opts);
  return fold(events.map(parseMergeQueueEvent));
}

/**
 * A queue command through the one write path (infra/event-sourcing): the stream folded,
 * decided, appended and projected in one transaction, decided again on a concurrent append.
 * Queue streams are short-lived in what they hold, so folding them is cheap.
 */
export async function handleQueueCommand(
  cx: { db: Db; store?: EventStore },
  projectId: string,
  baseRef: string,
  command: (s: MergeQueueStateOrNull) => MergeQueueCommand | null,
): Promise<MergeQueueStateOrNull> {
  const nothing = new Error('no queue stream');
  const r = await handle(mergeQueueStream(projectId, baseRef), mergeQueueDecider, mergeQueueProjection, {
    store: cx.store ?? pgStore(cx.db),
    load: 'stream',
    attempts: 10,
    // A queue that never built anything and is asked to do nothing: no stream, no state.
    missing: () => nothing,
    command,
  }).catch((err: unknown) => {
    if (err === nothing) return null;
    throw err;
  });
  return r ? r.state : null;
}
