import type { Db, Executor } from '../infra/db/db.js';
import type { StoredEvent } from '../infra/event-store.js';
import { START, checkpointAfter, type Checkpoint } from '../infra/event-store.js';
import { crQueries } from '../sql/queries/change-requests.js';
import { projectionQueries } from '../sql/queries/projections.js';
import { ChangeRequestFolder } from './change-requests.js';
import { SessionFolder } from './sessions.js';
import { sessionQueries } from '../sql/queries/sessions.js';
import { ReviewFolder } from './review.js';
import { reviewQueries } from '../sql/queries/review.js';
import { rebuildInsights } from './insights.js';
import type { InsightTable } from '../sql/queries/insights.js';
import { MergeQueueFolder } from './merge-queues.js';
import { mergeQueueQueries } from '../sql/queries/merge-queue.js';
import { MERGE_QUEUE_STREAM_PREFIX } from '../domain/merge-queue/index.js';

export interface RebuildReport {
  events: number;
  rows: number;
  /** Rows that differ between live and replayed (verify), by side. */
  differences: { side: 'live_only' | 'rebuilt_only'; cr_id?: string; table?: 'project_sessions' | 'session_sandboxes' | 'cr_comments' | 'cr_reviews' | 'merge_queues' | InsightTable; id?: string }[];
  /** Session rows (project_sessions) replayed. */
  sessions: number;
  applied: boolean;
  millis: number;
}

const INSERT_CHUNK = 2000;

/**
 * Replays the whole log into scratch tables inside one repeatable-read transaction, then
 * either compares them with the live tables (`verify`: nothing changes) or replaces the
 * live rows with them. Readers keep reading the old rows until the commit.
 */
export async function rebuildProjections(db: Db, opts: { verify: boolean; pageSize?: number }): Promise<RebuildReport> {
  const started = performance.now();
  return db.transaction(
    async (tx) => {
      const folder = new ChangeRequestFolder();
      const sessions = new SessionFolder();
      const review = new ReviewFolder();
      const queues = new MergeQueueFolder();
      const events = await replay(
        tx,
        (e) =>
          e.stream_id.startsWith('session-') ? sessions.apply(e)
          : e.stream_id.startsWith(MERGE_QUEUE_STREAM_PREFIX) ? queues.apply(e)
          : (folder.apply(e), review.apply(e)),
        opts.pageSize ?? 10_000,
      );
      // Sessions first: a CR's origin_session_id is kept only when its session row exists.
      await tx.run(sessionQueries.createScratch());
      const s = sessions.rows();
      for (let i = 0; i < s.sessions.length; i += INSERT_CHUNK) {
        await tx.run(sessionQueries.insertMany('sessions_rebuilt', s.sessions.slice(i, i + INSERT_CHUNK)));
      }
      for (let i = 0; i < s.sandboxes.length; i += INSERT_CHUNK) {
        await tx.run(sessionQueries.insertManySandboxes('sandboxes_rebuilt', s.sandboxes.slice(i, i + INSERT_CHUNK)));
      }
      await tx.run(crQueries.createScratch());
      const rows = folder.rows();
      for (let i = 0; i < rows.length; i += INSERT_CHUNK) {
        await tx.run(crQueries.insertMany('cr_rebuilt', rows.slice(i, i + INSERT_CHUNK)));
      }
      await tx.run(reviewQueries.createScratch());
      for (const [table, all] of [['cr_comments_rebuilt', review.commentRows()], ['cr_reviews_rebuilt', review.reviewRows()]] as const) {
        for (let i = 0; i < all.length; i += INSERT_CHUNK) await tx.run(reviewQueries.insertMany(table, all.slice(i, i + INSERT_CHUNK)));
      }
      await tx.run(mergeQueueQueries.createScratch());
      await queues.writeTo(tx);
      const report = { events, rows: rows.length, sessions: s.sessions.length };
      // Insights (docs/insights.md): kept after the fact from its own checkpoint, so verified up to it.
      const insights = await rebuildInsights(tx, opts.verify);
      if (opts.verify) {
        const differences = [
          ...insights.differences,
          ...(await tx.rows<RebuildReport['differences'][number]>(crQueries.diffScratch(100))),
          ...(await tx.rows<RebuildReport['differences'][number]>(sessionQueries.diffScratch(100))),
          ...(await tx.rows<RebuildReport['differences'][number]>(reviewQueries.diffScratch(100))),
          ...(await tx.rows<{ side: 'live_only' | 'rebuilt_only'; id: string }>(mergeQueueQueries.diffScratch(100))).map((d) => ({ ...d, table: 'merge_queues' as const })),
        ];
        return { ...report, differences, applied: false, millis: performance.now() - started };
      }
      await tx.run(crQueries.deleteAll());
      await tx.run(sessionQueries.deleteAll());
      await tx.run(sessionQueries.copyScratchToLive());
      await tx.run(crQueries.copyScratchToLive());
      await tx.run(reviewQueries.replaceLive());
      await tx.run(mergeQueueQueries.replaceLive());
      return { ...report, differences: [], applied: true, millis: performance.now() - started };
    },
    { isolation: 'repeatable read' },
  );
}

async function replay(tx: Executor, apply: (e: StoredEvent) => void, pageSize: number): Promise<number> {
  let at: Checkpoint = START;
  let n = 0;
  for (;;) {
    const page = await tx.rows<StoredEvent>(projectionQueries.pageOfLog(at, pageSize));
    for (const e of page) apply(e);
    n += page.length;
    if (page.length < pageSize) return n;
    at = checkpointAfter(page[page.length - 1]!);
  }
}
