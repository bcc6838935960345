import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { append, readAll, readStream, START, ConcurrencyError, checkpointAfter } from '../../../infra/event-store.js';
import { executor } from '../../../infra/db/db.js';
import { createTestDb, type TestDb } from '../../support/db.js';
import { until } from '../../support/wait.js';

describe('event store', () => {
  let t: TestDb;
  before(async () => {
    t = await createTestDb();
  });
  after(async () => t.drop());

  const meta = { actor: randomUUID() };
  const ev = (type: string, data: unknown = {}) => ({ type, data });

  it('appends with the expected version and reads the stream back in order', async () => {
    const s = `test-${randomUUID()}`;
    const r1 = await t.db.transaction((tx) =>
      append(tx, { streamId: s, streamType: 'test', projectId: null, expectedVersion: 0, events: [ev('A', { n: 1 }), ev('B')], metadata: meta }),
    );
    expect(r1.nextVersion).to.equal(2);
    const r2 = await t.db.transaction((tx) =>
      append(tx, { streamId: s, streamType: 'test', projectId: null, expectedVersion: 2, events: [ev('C')], metadata: meta }),
    );
    expect(r2.nextVersion).to.equal(3);
    const events = await readStream(t.db, s);
    expect(events.map((e) => [e.type, e.stream_position])).to.deep.equal([['A', 1], ['B', 2], ['C', 3]]);
    expect(events[0]!.data).to.deep.equal({ n: 1 });
    expect(events[0]!.metadata.actor).to.equal(meta.actor);
  });

  it('refuses an append decided on a stale version with a typed concurrency error', async () => {
    const s = `test-${randomUUID()}`;
    await t.db.transaction((tx) => append(tx, { streamId: s, streamType: 'test', projectId: null, expectedVersion: 0, events: [ev('A')], metadata: meta }));
    let caught: unknown;
    try {
      await t.db.transaction((tx) => append(tx, { streamId: s, streamType: 'test', projectId: null, expectedVersion: 0, events: [ev('B')], metadata: meta }));
    } catch (err) {
      caught = err;
    }
    expect(caught).to.be.instanceOf(ConcurrencyError);
    expect((caught as ConcurrencyError).code).to.equal('concurrency');
    expect((await readStream(t.db, s)).map((e) => e.type)).to.deep.equal(['A']);
  });

  it('lets exactly one of two concurrent appends at the same version win', async () => {
    const s = `test-${randomUUID()}`;
    const results = await Promise.allSettled(
      [1, 2, 3, 4].map((i) =>
        t.db.transaction((tx) => append(tx, { streamId: s, streamType: 'test', projectId: null, expectedVersion: 0, events: [ev(`E${i}`)], metadata: meta })),
      ),
    );
    expect(results.filter((r) => r.status === 'fulfilled')).to.have.length(1);
    expect((await readStream(t.db, s))).to.have.length(1);
  });

  it('treats a re-append of the same event ids as done, without writing twice', async () => {
    const s = `test-${randomUUID()}`;
    const events = [{ ...ev('A'), event_id: randomUUID() }, { ...ev('B'), event_id: randomUUID() }];
    const first = await t.db.transaction((tx) => append(tx, { streamId: s, streamType: 'test', projectId: null, expectedVersion: 0, events, metadata: meta }));
    const again = await t.db.transaction((tx) => append(tx, { streamId: s, streamType: 'test', projectId: null, expectedVersion: 0, events, metadata: meta }));
    expect(again.nextVersion).to.equal(2);
    expect(again.events.map((e) => e.event_id)).to.deep.equal(first.events.map((e) => e.event_id));
    expect(await readStream(t.db, s)).to.have.length(2);
  });

  it('refuses UPDATE, DELETE and TRUNCATE on events', async () => {
    const s = `test-${randomUUID()}`;
    await t.db.transaction((tx) => append(tx, { streamId: s, streamType: 'test', projectId: null, expectedVersion: 0, events: [ev('A')], metadata: meta }));
    for (const text of [
      `UPDATE events SET type = 'X' WHERE stream_id = $1`,
      `DELETE FROM events WHERE stream_id = $1`,
    ]) {
      let msg = '';
      try {
        await t.db.run({ text, values: [s] });
      } catch (err) {
        msg = (err as Error).message;
      }
      expect(msg).to.match(/append-only/);
    }
    let truncate = '';
    try {
      await t.db.run({ text: 'TRUNCATE events CASCADE', values: [] });
    } catch (err) {
      truncate = (err as Error).message;
    }
    expect(truncate).to.match(/append-only/);
    expect((await readStream(t.db, s))[0]!.type).to.equal('A');
  });

  it('never lets a global reader skip an event whose transaction commits late', async () => {
    const s1 = `test-${randomUUID()}`;
    const s2 = `test-${randomUUID()}`;
    // Position the reader after everything committed so far.
    let at = START;
    for (let page = await readAll(t.db, at); page.length; page = await readAll(t.db, at)) at = checkpointAfter(page[page.length - 1]!);

    // T1 appends first (lower position) but commits after T2.
    const c1 = await t.db.connect();
    const c2 = await t.db.connect();
    try {
      await c1.query('BEGIN');
      await append(executor(c1), { streamId: s1, streamType: 'test', projectId: null, expectedVersion: 0, events: [ev('Late')], metadata: meta });
      await c2.query('BEGIN');
      await append(executor(c2), { streamId: s2, streamType: 'test', projectId: null, expectedVersion: 0, events: [ev('Early')], metadata: meta });
      await c2.query('COMMIT');

      // T2 is committed, but T1 (older) is still running: the reader must wait, not skip past it.
      const before = (await readAll(t.db, at)).filter((e) => e.stream_id === s1 || e.stream_id === s2);
      expect(before.map((e) => e.type)).to.deep.equal([]);

      await c1.query('COMMIT');
      // The horizon is cluster-wide: a transaction of another (parallel) test may still hold
      // the reader back for a moment. A reader keeps reading, as the live feed does.
      const seen: string[] = [];
      await until(
        async () => {
          for (let page = await readAll(t.db, at); page.length; page = await readAll(t.db, at)) {
            seen.push(...page.filter((e) => e.stream_id === s1 || e.stream_id === s2).map((e) => e.type));
            at = checkpointAfter(page[page.length - 1]!);
          }
          return seen.length >= 2;
        },
        'both events read',
        { timeoutMs: 10_000 },
      ).catch(() => undefined);
      expect(seen).to.deep.equal(['Late', 'Early']);
    } finally {
      c1.release();
      c2.release();
    }
  });
});
