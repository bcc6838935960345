import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { handleCommand, openInTx } from '../../../services/change-requests/handle.js';
import { createCrCommandPath, GROUP_IN_FLIGHT, type CrCommandPath } from '../../../services/change-requests/command-path.js';
import type { Projection, Write } from '../../../infra/event-sourcing/port.js';
import type { Patch } from '../../../infra/event-sourcing/pg-store.js';
import { crProjection, crStream } from '../../../projections/change-requests.js';
import { createGroupCommit } from '../../../infra/db/group-commit.js';
import { readStream } from '../../../infra/event-store.js';
import { streamIdOf } from '../../../domain/change-request/index.js';
import { crQueries } from '../../../sql/queries/change-requests.js';
import { insertProjects, type BenchProject } from '../../../bench/support/cr-events.js';
import { createTestDb, type TestDb } from '../../support/db.js';
import { createDb, type Db } from '../../../infra/db/db.js';
import { crOfRow, decodeCrRow } from '../../../sql/queries/change-request-row.js';

/** Group commit of concurrent CR commands: batched, each with its own optimistic check. */
describe('group-committed CR appends', function () {
  this.timeout(30_000);
  let t: TestDb;
  let p: BenchProject;
  let commands: CrCommandPath;
  before(async () => {
    t = await createTestDb();
    commands = createCrCommandPath(t.db);
    p = (await t.db.transaction((tx) => insertProjects(tx, 1, 'gc')))[0]!;
  });
  after(async () => t.drop());

  const now = () => new Date();
  async function openCr(): Promise<string> {
    const crId = randomUUID();
    await t.db.transaction(async (tx) => {
      const { number } = (await tx.one<{ number: number }>(crQueries.nextNumber(p.projectId)))!;
      await openInTx(tx, p.projectId, crId, {
          type: 'OpenChangeRequest',
          data: {
            cr_id: crId, account_id: p.accountId, project_id: p.projectId, number, title: `GC ${number}`, description: '',
            base_ref: 'main', head_ref: `gc/${number}`, head_commit_sha: null, base_commit_sha: null, origin_session_id: null, metadata: {},
          },
          meta: { actor: p.userId, now: now() },
        });
    });
    return crId;
  }
  const close = (crId: string) => handleCommand({ db: t.db, commands }, p.projectId, crId, () => ({ type: 'CloseChangeRequest', meta: { actor: p.userId, now: now() } }));

  it('batches concurrent commands on different CRs into fewer statements; every one is stored and projected', async () => {
    const ids = await Promise.all(Array.from({ length: 40 }, () => openCr()));
    const before = commands.appends.stats();
    const results = await Promise.all(ids.map(close));
    const after = commands.appends.stats();
    expect(results.every((r) => r.events.length === 1 && r.cr.status === 'closed')).to.equal(true);
    expect(after.commands - before.commands).to.equal(40);
    expect(after.batches - before.batches, 'fewer statements than commands').to.be.lessThan(40);
    for (const id of ids) {
      const row = await t.db.one<{ status: string; stream_version: number }>(crQueries.byId(p.projectId, id));
      expect(row).to.include({ status: 'closed', stream_version: 2 });
      const events = await readStream(t.db, streamIdOf(id));
      expect(events.map((e) => [e.type, e.stream_position])).to.deep.equal([['ChangeRequestOpened', 1], ['ChangeRequestClosed', 2]]);
    }
    const positions = results.map((r) => r.events[0]!.global_position);
    expect(new Set(positions).size, 'distinct global positions').to.equal(40);
  });

  it('lets exactly one of many concurrent commands on one CR win; the others see the new state', async () => {
    const id = await openCr();
    const outcomes = await Promise.allSettled(Array.from({ length: 10 }, () => close(id)));
    const won = outcomes.filter((o) => o.status === 'fulfilled' && o.value.events.length === 1);
    expect(won).to.have.length(1);
    for (const o of outcomes) if (o.status === 'rejected') expect((o.reason as { status?: string; kind?: string }).constructor.name).to.equal('DomainError');
    expect((await readStream(t.db, streamIdOf(id))).map((e) => e.type)).to.deep.equal(['ChangeRequestOpened', 'ChangeRequestClosed']);
  });

  describe('with a second server process on the same database (its own pool, its own cached rows)', () => {
    let other: { db: Db; commands: CrCommandPath };
    let here: { db: Db; commands: CrCommandPath };
    before(() => {
      const db = createDb(t.url, { max: 4 });
      other = { db, commands: createCrCommandPath(db) };
      here = { db: t.db, commands };
    });
    after(async () => other.db.close());
    const cmd = (type: 'CloseChangeRequest' | 'ReopenChangeRequest') => () => ({ type, meta: { actor: p.userId, now: now() } });
    const types = async (id: string) => (await readStream(t.db, streamIdOf(id))).map((e) => [e.type, e.stream_position]);
    const row = async (id: string) => decodeCrRow((await t.db.one<Record<string, unknown>>(crQueries.byId(p.projectId, id)))!);

    it('a command whose cached row another process moved past is appended on the fresh row, once, within one attempt', async () => {
      const id = await openCr();
      await handleCommand(here, p.projectId, id, cmd('CloseChangeRequest')); // cached here: closed at 2
      await handleCommand(other, p.projectId, id, cmd('ReopenChangeRequest')); // 3
      await handleCommand(other, p.projectId, id, cmd('CloseChangeRequest')); // 4: closed again, as cached, but later
      const res = await handleCommand(here, p.projectId, id, cmd('ReopenChangeRequest'), { attempts: 1 }); // the stale row costs no attempt
      expect(res.events.map((e) => e.stream_position), 'refused at 2, appended at 5').to.deep.equal([5]);
      expect(await types(id)).to.deep.equal([
        ['ChangeRequestOpened', 1], ['ChangeRequestClosed', 2], ['ChangeRequestReopened', 3], ['ChangeRequestClosed', 4], ['ChangeRequestReopened', 5],
      ]);
      const stored = await row(id);
      expect(stored).to.deep.equal({ ...res.cr, stream_version: 5 });
      expect(stored.closed_at, 'the patch cleared what the reopen cleared').to.equal(null);
    });

    it('a command the cached row refuses or makes a no-op is decided again on the database row', async () => {
      const id = await openCr();
      await handleCommand(here, p.projectId, id, cmd('CloseChangeRequest')); // cached here: closed
      await handleCommand(other, p.projectId, id, cmd('ReopenChangeRequest')); // open in the database
      const res = await handleCommand(here, p.projectId, id, cmd('CloseChangeRequest')); // closing a closed CR, says the cache
      expect(res.events.map((e) => e.type)).to.deep.equal(['ChangeRequestClosed']);
      expect(await row(id)).to.include({ status: 'closed', stream_version: 4 });
    });

    it('a cached CR whose row is gone takes no event: not found, its stream unchanged', async () => {
      const id = await openCr();
      await handleCommand(here, p.projectId, id, cmd('CloseChangeRequest')); // cached here
      await t.db.run({ text: 'DELETE FROM change_requests WHERE cr_id = $1', values: [id] }); // as a project deletion's cascade
      const err = await handleCommand(here, p.projectId, id, cmd('ReopenChangeRequest')).then(() => null, (e: unknown) => e);
      expect((err as { code?: string } | null)?.code).to.equal('not_found');
      expect(await types(id)).to.deep.equal([['ChangeRequestOpened', 1], ['ChangeRequestClosed', 2]]);
    });
  });

  it('in one batch, a command decided on a stale version stores nothing while the others are stored', async () => {
    const [a, b, c] = await Promise.all([openCr(), openCr(), openCr()]);
    const cmd = async (crId: string, expected: number): Promise<Patch> => {
      const row = decodeCrRow((await t.db.one(crQueries.byId(p.projectId, crId)))!);
      const next = { ...crOfRow(row), title: `edited ${crId}` };
      const w: Write<unknown> = {
        stream: crStream(p.projectId, crId), expected, metadata: { actor: p.userId },
        events: [{ type: 'ChangeRequestEdited', data: { title: `edited ${crId}` } }],
        next, projection: crProjection as Projection<unknown>, prevRow: { ...row, stream_version: expected },
      };
      return { w, next: { ...next, stream_version: expected + 1 } };
    };
    const gc = commands.appends;
    // Commands held in flight (their stream rows locked by another transaction) fill the
    // batcher's slots; the three queued behind them then go out as one batch.
    const heldIds = await Promise.all(Array.from({ length: GROUP_IN_FLIGHT }, () => openCr()));
    const locker = await t.db.connect();
    const cmds = [await cmd(a!, 1), await cmd(b!, 7), await cmd(c!, 1)];
    const held = await Promise.all(heldIds.map((id) => cmd(id, 1)));
    const before = gc.stats();
    let res: Awaited<ReturnType<typeof gc.submit>>[];
    try {
      await locker.query('BEGIN');
      await locker.query('SELECT 1 FROM streams WHERE stream_id = ANY($1) FOR UPDATE', [heldIds.map(streamIdOf)]);
      const blocked = held.map((h) => gc.submit(h));
      const queued = cmds.map((x) => gc.submit(x));
      await locker.query('COMMIT');
      await Promise.all(blocked);
      res = await Promise.all(queued);
    } finally {
      locker.release();
    }
    const after = gc.stats();
    expect([after.batches - before.batches, after.commands - before.commands], 'the held ones alone, then [a, b, c] together').to.deep.equal([GROUP_IN_FLIGHT + 1, GROUP_IN_FLIGHT + 3]);
    expect(res.map((r) => r?.[0]?.stream_position ?? null)).to.deep.equal([2, null, 2]);
    expect((await readStream(t.db, streamIdOf(b!))).length, 'the stale one appended nothing').to.equal(1);
    const rowB = await t.db.one<{ title: string; stream_version: number }>(crQueries.byId(p.projectId, b!));
    expect(rowB, 'and wrote no row').to.include({ stream_version: 1 });
    expect(rowB!.title).to.not.match(/^edited/);
  });
});

describe('group commit (the batcher alone)', () => {
  it('runs a failed batch again command by command: only the guilty command fails', async () => {
    let release: () => void = () => {};
    const gate = new Promise<void>((r) => (release = r));
    const batches: string[][] = [];
    const gc = createGroupCommit<string, string>({
      key: (s) => s.split(':')[0]!,
      maxInFlight: 1,
      async runOne(s) {
        if (s === 'first') await gate;
        if (s.startsWith('bad')) throw new Error(`refused ${s}`);
        return `ok ${s}`;
      },
      async runBatch(items) {
        batches.push(items);
        if (items.some((s) => s.startsWith('bad'))) throw new Error('batch failed');
        return items.map((s) => `ok ${s}`);
      },
    });
    const first = gc.submit('first'); // in flight, alone, holding the batcher
    const rest = ['x:1', 'bad:1', 'y:1', 'x:2'].map((s) => gc.submit(s).then((v) => v, (e: Error) => e.message));
    release();
    expect(await first).to.equal('ok first');
    expect(await Promise.all(rest)).to.deep.equal(['ok x:1', 'refused bad:1', 'ok y:1', 'ok x:2']);
    expect(batches[0], 'one key once per batch').to.deep.equal(['x:1', 'bad:1', 'y:1']);
    expect(gc.stats().fallbacks).to.equal(1);
  });
});
