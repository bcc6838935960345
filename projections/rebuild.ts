import type { Db, Executor } from '../infra/db/db.js';
import type { StoredEvent } from '../infra/event-store.js';
import { START, checkpointAfter, type Checkpoint } from '../infra/event-store.js';
import { crQueries } from '../sql/queries/change-requests.js';
import { projectionQueries } from '../sql/queries/projections.js';
import { ChangeRequestFolder } from './change-requests.js';

export interface RebuildReport {
  events: number;
  rows: number;
  /** Rows that differ between live and replayed (verify), by side. */
  differences: { side: 'live_only' | 'rebuilt_only'; cr_id: string }[];
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
  const started = Date.now();
  return db.transaction(
    async (tx) => {
      const folder = new ChangeRequestFolder();
      const events = await replay(tx, (e) => folder.apply(e), opts.pageSize ?? 10_000);
      await tx.run(crQueries.createScratch());
      const rows = folder.rows();
      for (let i = 0; i < rows.length; i += INSERT_CHUNK) {
        await tx.run(crQueries.insertMany('cr_rebuilt', rows.slice(i, i + INSERT_CHUNK)));
      }
      if (opts.verify) {
        const differences = await tx.rows<RebuildReport['differences'][number]>(crQueries.diffScratch(100));
        return { events, rows: rows.length, differences, applied: false, millis: Date.now() - started };
      }
      await tx.run(crQueries.deleteAll());
      await tx.run(crQueries.copyScratchToLive());
      return { events, rows: rows.length, differences: [], applied: true, millis: Date.now() - started };
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
