import { expect } from 'chai';
import { createFeedHub } from '../../../api/feed-hub.js';
import type { Db, Query } from '../../../infra/db/db.js';
import { START, type StoredEvent } from '../../../infra/event-store.js';
import { silentLogger } from '../../../infra/logger.js';
import { createTestDb, type TestDb } from '../../support/db.js';

/** The feed's watcher: one cheap query per tick for the whole process, none when idle. */
describe('feed hub watcher', function () {
  this.timeout(30_000);
  let t: TestDb;
  before(async () => {
    t = await createTestDb();
  });
  after(async () => t.drop());

  /** The test db, counting the watcher's statements. */
  function counting(db: Db) {
    const counts = { watch: 0 };
    const wrapped: Db = {
      ...db,
      one: <R>(q: Query) => {
        if (q.name === 'events_latest_position') counts.watch++;
        return db.one<R>(q);
      },
    };
    return { db: wrapped, counts };
  }

  const sink = () => ({ delivered: [] as StoredEvent[], async deliver(e: StoredEvent[]) { this.delivered.push(...e); }, fail() {} });
  const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

  it('queries once per tick whatever the number of subscribers, and not at all without them', async () => {
    const { db, counts } = counting(t.db);
    const hub = createFeedHub({ db, logger: silentLogger, watchMs: 50, pollMs: 60_000 });
    await sleep(200);
    expect(counts.watch, 'no subscriber, no query').to.equal(0);
    const subs = [1, 2, 3, 4, 5, 6, 7, 8].map(() => hub.subscribe('00000000-0000-4000-8000-000000000001', START, sink()));
    await sleep(500);
    expect(counts.watch).to.be.within(5, 13); // ~10 ticks, not ~80
    for (const s of subs) s.close();
    const after = counts.watch;
    await sleep(200);
    expect(counts.watch - after, 'idle again').to.be.at.most(1);
    await hub.close();
  });
});
