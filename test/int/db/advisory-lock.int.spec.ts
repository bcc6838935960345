import { expect } from 'chai';
import pg from 'pg';
import { withAdvisoryLock } from '../../../infra/db/advisory-lock.js';
import { advisoryLockQueries as q } from '../../../sql/queries/advisory-locks.js';
import { createTestDb, type TestDb } from '../../support/db.js';
import { until } from '../../support/wait.js';

/**
 * The one way the server takes a named lock for a piece of work (infra/db/advisory-lock.ts):
 * one holder at a time across processes (a second pg session stands for a second server
 * process), the lock given back however the work ends, and a pooled connection never
 * returned to the pool still holding it.
 */
describe('infra/db: withAdvisoryLock', function () {
  this.timeout(30_000);
  let t: TestDb;
  let other: pg.Client;
  before(async () => {
    t = await createTestDb({ max: 2 });
    other = new pg.Client(t.db.url);
    await other.connect();
  });
  after(async () => {
    await other?.end();
    await t?.drop();
  });
  const freeElsewhere = async (key: string | bigint) => (await other.query<{ ok: boolean }>(q.isFree(key).text, q.isFree(key).values)).rows[0]!.ok;

  it('runs the work holding the lock, on the connection that holds it, and gives it back', async () => {
    const r = await withAdvisoryLock(t.db, 'adv:a', async (db) => {
      expect(await freeElsewhere('adv:a'), 'held while the work runs').to.equal(false);
      // The lock is this session's: taking it again on the same connection succeeds (re-entrant).
      return (await db.one<{ ok: boolean }>(q.tryLock('adv:a')))?.ok && (await db.one<{ ok: boolean }>(q.unlock('adv:a')))?.ok;
    });
    expect(r).to.deep.equal({ locked: true, value: true });
    expect(await freeElsewhere('adv:a')).to.equal(true);
  });

  it('another holder: the work does not run; with wait it runs once the holder lets go', async () => {
    await other.query(q.lock('adv:b').text, q.lock('adv:b').values);
    let ran = 0;
    expect(await withAdvisoryLock(t.db, 'adv:b', async () => ++ran)).to.deep.equal({ locked: false });
    expect(ran).to.equal(0);
    const waiting = withAdvisoryLock(t.db, 'adv:b', async () => ++ran, { wait: true });
    await until(
      async () => (await other.query<{ n: number }>("SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND database = (SELECT oid FROM pg_database WHERE datname = current_database()) AND NOT granted")).rows[0]!.n === 1,
      'the second caller queued behind the holder',
    );
    expect(ran, 'still waiting').to.equal(0);
    await other.query(q.unlock('adv:b').text, q.unlock('adv:b').values);
    expect(await waiting).to.deep.equal({ locked: true, value: 1 });
  });

  it("work that throws: the caller gets its error, the lock is free, and no pooled connection keeps it", async () => {
    const err = await withAdvisoryLock(t.db, 'adv:c', async () => {
      throw new Error('the work failed');
    }).catch((e: Error) => e);
    expect((err as Error).message).to.equal('the work failed');
    expect(await freeElsewhere('adv:c')).to.equal(true);
    const held = await other.query<{ n: number }>("SELECT count(*)::int AS n FROM pg_locks WHERE locktype = 'advisory' AND database = (SELECT oid FROM pg_database WHERE datname = current_database()) AND pid <> pg_backend_pid()");
    expect(held.rows[0]!.n, 'no pooled connection holds an advisory lock').to.equal(0);
  });

  it('a bigint key is that lock itself (the migration lock an earlier server version takes)', async () => {
    await other.query('SELECT pg_advisory_lock($1)', [7_301_447_112]);
    expect(await withAdvisoryLock(t.db, 7_301_447_112n, async () => 'ran')).to.deep.equal({ locked: false });
    await other.query('SELECT pg_advisory_unlock($1)', [7_301_447_112]);
    expect(await withAdvisoryLock(t.db, 7_301_447_112n, async () => 'ran')).to.deep.equal({ locked: true, value: 'ran' });
  });
});
