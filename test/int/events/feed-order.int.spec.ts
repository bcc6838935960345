import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { startEmbeddedPostgres, type EmbeddedPostgres } from '../../../infra/db/embedded.js';
import { createDb, type Db } from '../../../infra/db/db.js';
import { migrate } from '../../../infra/db/migrate.js';
import { append, checkpointAfter, checkpointOf, readAll, START, type Checkpoint, type StoredEvent } from '../../../infra/event-store.js';

/**
 * The global read must order by the xid8 column, never by its text form: "1062" sorts
 * before "771" as a string, and a reader paging across a digit boundary of transaction ids
 * then gets some events twice and others never. Transaction ids are cluster-wide, so this
 * runs on a cluster of its own, fresh from initdb (ids in the hundreds), and burns ids
 * across 999 -> 1000 and 9999 -> 10000 while appending.
 */
describe('global read across transaction-id digit boundaries', function () {
  this.timeout(120_000);
  let dir: string;
  let cluster: EmbeddedPostgres;
  let db: Db;

  before(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'svc-xid-'));
    await chmod(dir, 0o755);
    cluster = await startEmbeddedPostgres(dir);
    db = createDb(cluster.url(), { max: 8 });
    await migrate(db);
  });
  after(async () => {
    await db?.close();
    await cluster?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  async function currentXid(): Promise<bigint> {
    const r = await db.pool.query<{ x: string }>('SELECT pg_current_xact_id()::text AS x');
    return BigInt(r.rows[0]!.x);
  }

  /** Consumes transaction ids (each autocommit call assigns one) until the next id is `target`. */
  async function burnTo(target: bigint): Promise<void> {
    const clients = await Promise.all(Array.from({ length: 4 }, () => db.pool.connect()));
    try {
      for (;;) {
        const left = Number(target - (await currentXid()) - 1n);
        if (left <= 0) return;
        const per = Math.max(1, Math.floor(left / clients.length));
        await Promise.all(
          clients.map(async (c, i) => {
            const n = i === clients.length - 1 ? left - per * (clients.length - 1) : per;
            for (let k = 0; k < n; k++) await c.query('SELECT pg_current_xact_id()');
          }),
        );
      }
    } finally {
      for (const c of clients) c.release();
    }
  }

  const projects = [randomUUID(), randomUUID()];
  const versions = new Map<string, number>();
  const streams = projects.flatMap((p) => [`cr-${p}-a`, `cr-${p}-b`, `session-${p}`]).map((s, i) => ({ id: s, project: projects[i % 2 === 0 ? 0 : 1]! }));

  async function appendRound(label: string): Promise<void> {
    for (const s of streams) {
      const v = versions.get(s.id) ?? 0;
      // Each append is its own transaction (its own xid); every other one carries two events.
      const events = v % 2 === 0 ? [{ type: 'T', data: { label } }] : [{ type: 'T', data: { label } }, { type: 'U', data: { label } }];
      await db.transaction((tx) =>
        append(tx, { streamId: s.id, streamType: 'test', projectId: s.project, expectedVersion: v, events, metadata: { actor: 'test' } }),
      );
      versions.set(s.id, v + events.length);
    }
  }

  /** Every event from `from` on, page by page, the way the feed reads. */
  async function readFrom(from: Checkpoint, pageSize: number, projectId?: string): Promise<StoredEvent[]> {
    const out: StoredEvent[] = [];
    let at = from;
    for (;;) {
      const page = await readAll(db, at, { limit: pageSize, ...(projectId ? { projectId } : {}) });
      out.push(...page);
      if (page.length < pageSize) return out;
      at = checkpointAfter(page[page.length - 1]!);
    }
  }

  it('yields every event exactly once, in commit order, from any checkpoint', async () => {
    const start = await currentXid();
    expect(start < 990n, `a fresh cluster starts below 990 (got ${start})`).to.equal(true);
    await appendRound('before');
    await burnTo(997n);
    for (let i = 0; i < 3; i++) await appendRound(`around-1000-${i}`);
    await burnTo(9_997n);
    for (let i = 0; i < 3; i++) await appendRound(`around-10000-${i}`);

    // The ground truth, independent of the read under test: every event, ordered by the
    // numeric transaction id (commit order here: each append committed before the next began).
    const truth = (
      await db.pool.query<{ global_position: string; xid: string }>(
        'SELECT global_position, transaction_id::text AS xid FROM events ORDER BY global_position',
      )
    ).rows.map((r) => ({ pos: Number(r.global_position), xid: BigInt(r.xid) }));
    truth.sort((a, b) => (a.xid === b.xid ? a.pos - b.pos : a.xid < b.xid ? -1 : 1));
    const xids = truth.map((t) => t.xid);
    expect(xids.some((x) => x < 1000n) && xids.some((x) => x >= 1000n && x < 10_000n) && xids.some((x) => x >= 10_000n)).to.equal(true);
    const expected = truth.map((t) => t.pos);
    expect(expected.length).to.equal([...versions.values()].reduce((a, b) => a + b, 0));

    // From the start, in pages of every size from 1 up: exactly the truth.
    for (const size of [1, 2, 3, 5, 8, 1000]) {
      const got = (await readFrom(START, size)).map((e) => e.global_position);
      expect(got, `page size ${size}`).to.deep.equal(expected);
    }
    // From every checkpoint (as `?after=<position>` resumes): exactly the rest, once each.
    for (let i = 0; i < expected.length; i++) {
      const cp = await checkpointOf(db, expected[i]!);
      expect(cp, `checkpoint of ${expected[i]}`).to.not.equal(null);
      const got = (await readFrom(cp!, 4)).map((e) => e.global_position);
      expect(got, `after ${expected[i]}`).to.deep.equal(expected.slice(i + 1));
    }
    // Per project: the project's share of the same order.
    for (const p of projects) {
      const mine = new Set(
        (await db.pool.query<{ global_position: string }>('SELECT global_position FROM events WHERE project_id = $1', [p])).rows.map((r) =>
          Number(r.global_position),
        ),
      );
      const got = (await readFrom(START, 3, p)).map((e) => e.global_position);
      expect(got).to.deep.equal(expected.filter((x) => mine.has(x)));
    }
  });
});
