import { expect } from 'chai';
import { mock } from 'node:test';
import { createFeedHub } from '../../../api/feed-hub.js';
import { feedReads } from '../../../services/api-services/server.js';
import type { Db, Query } from '../../../infra/db/db.js';
import { START, type StoredEvent } from '../../../infra/event-store.js';
import { silentLogger } from '../../../lib/logger.js';
import { createTestDb, type TestDb } from '../../support/db.js';

/**
 * The feed's watcher: one cheap query per tick for the whole process, none when idle.
 * The hub's intervals run on mocked timers, advanced one tick at a time by the test, and
 * each tick's query is awaited: the counts are exact, whatever the machine's speed.
 */
describe('feed hub watcher', function () {
  this.timeout(30_000);
  let t: TestDb;
  before(async () => {
    t = await createTestDb();
  });
  after(async () => t.drop());
  afterEach(() => mock.timers.reset());

  /** The test db, counting the watcher's statements and remembering the last one in flight. */
  function counting(db: Db) {
    const counts = { watch: 0, inFlight: Promise.resolve() as Promise<unknown> };
    const wrapped: Db = {
      ...db,
      one: <R>(q: Query) => {
        const p = db.one<R>(q);
        if (q.name === 'events_latest_position') {
          counts.watch++;
          counts.inFlight = p.catch(() => {});
        }
        return p;
      },
    };
    return { db: wrapped, counts };
  }

  const sink = () => ({ delivered: [] as StoredEvent[], async deliver(e: StoredEvent[]) { this.delivered.push(...e); }, fail() {} });

  it('queries once per tick whatever the number of subscribers, and not at all without them', async () => {
    mock.timers.enable({ apis: ['setInterval'] });
    const { db, counts } = counting(t.db);
    const hub = createFeedHub({ reads: feedReads(db), logger: silentLogger, watchMs: 50, pollMs: 60_000 });
    /** Advances the clock one watch interval and waits for that tick's query to finish. */
    const tick = async () => {
      mock.timers.tick(50);
      await counts.inFlight;
      await new Promise((r) => setImmediate(r)); // the tick's `finally` clears its in-flight flag
    };
    for (let i = 0; i < 4; i++) await tick();
    expect(counts.watch, 'no subscriber, no query').to.equal(0);
    const subs = [1, 2, 3, 4, 5, 6, 7, 8].map(() => hub.subscribe('00000000-0000-4000-8000-000000000001', START, sink()));
    for (let i = 0; i < 10; i++) await tick();
    expect(counts.watch, 'one query per tick for 8 subscribers').to.equal(10);
    for (const s of subs) s.close();
    const after = counts.watch;
    for (let i = 0; i < 4; i++) await tick();
    expect(counts.watch - after, 'idle again').to.equal(0);
    await hub.close();
  });
});
