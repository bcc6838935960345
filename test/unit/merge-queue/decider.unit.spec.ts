import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { MemoryEventStore } from '../../../infra/event-sourcing/memory-store.js';
import { decide, fold, type BuiltEntry, type MergeQueueStateOrNull } from '../../../domain/merge-queue/index.js';
import { decideCheckEvents, foldCrChecks, decideChecks, parseChangeRequestEvent, type ChangeRequestEvent, type CrChecks } from '../../../domain/change-request/index.js';
import { handleQueueCommand } from '../../../services/merge-queue/handle.js';
import type { Db } from '../../../infra/db/db.js';

const A = 'a'.repeat(40);
const B = 'b'.repeat(40);
const C = 'c'.repeat(40);
const D = 'd'.repeat(40);
const P = randomUUID();
const U = randomUUID();
const meta = { actor: U, now: new Date('2026-11-28T12:00:00Z') };
const T = meta.now.toISOString();
const entry = (cr_id: string, base_sha: string, merge_sha: string, number = 1): BuiltEntry => ({ cr_id, number, head_sha: A, base_sha, merge_sha, strategy: 'merge-commit' });
const run = (s: MergeQueueStateOrNull, ...cmds: Parameters<typeof decide>[0][]) => cmds.reduce((st, c) => fold(decide(c, st), st), s);

describe('the merge queue aggregate (pure)', () => {
  const x = randomUUID();
  const y = randomUUID();
  const build = (e: BuiltEntry) => ({ type: 'BuildEntry' as const, project_id: P, base_ref: 'main', entry: e, meta });

  it('builds a chain only on its end, once per CR; lands a prefix, then builds on what landed', () => {
    let s = run(null, build(entry(x, B, C)));
    expect(s).to.include({ base_sha: B, project_id: P, base_ref: 'main' });
    expect(() => decide(build(entry(y, B, D)), s), 'not on the end of the chain').to.throw(/end of the chain/);
    expect(decide(build(entry(x, B, C)), s), 'built once').to.deep.equal([]);
    s = run(s, build(entry(y, C, D, 2)), { type: 'BeginLanding', count: 1, meta });
    expect(s!.landing).to.deep.equal({ count: 1, base_sha: B, merge_sha: C });
    expect(() => decide(build(entry(randomUUID(), D, A)), s), 'nothing is built under a landing').to.throw(/landing/);
    expect(decide({ type: 'BeginLanding', count: 1, meta }, s), 'the same landing again: nothing').to.deep.equal([]);
    s = run(s, { type: 'FinishLanding', meta });
    expect(s).to.include({ base_sha: C, landing: null, landed: 1 });
    expect(s!.built.map((b) => b.cr_id)).to.deep.equal([y]);
  });

  it('a rebuild keeps the first entries and drops a landing not settled; base_changed drops them all', () => {
    let s = run(null, build(entry(x, B, C)), build(entry(y, C, D, 2)), { type: 'BeginLanding', count: 2, meta });
    s = run(s, { type: 'Rebuild', project_id: P, base_ref: 'main', reason: 'entry_left', kept: 1, meta });
    expect(s).to.include({ landing: null, rebuilds: 1 });
    expect(s!.built.map((b) => b.cr_id)).to.deep.equal([x]);
    s = run(s, { type: 'Rebuild', project_id: P, base_ref: 'main', reason: 'base_changed', kept: 0, meta });
    expect(s).to.include({ base_sha: null, rebuilds: 2 });
    expect(s!.built).to.deep.equal([]);
    expect(decide({ type: 'Rebuild', project_id: P, base_ref: 'main', reason: 'entry_left', kept: 0, meta }, s), 'nothing to rebuild').to.deep.equal([]);
  });

  it('conflicts are held and released once', () => {
    let s = run(null, build(entry(x, B, C)), { type: 'HoldConflict', cr_id: y, ahead: [x], meta });
    expect(s!.held).to.deep.equal([{ cr_id: y, ahead: [x] }]);
    s = run(s, { type: 'ReleaseConflict', cr_id: y, landed: [x], meta });
    expect(s!.held).to.deep.equal([]);
    expect(decide({ type: 'ReleaseConflict', cr_id: y, landed: [x], meta }, s)).to.deep.equal([]);
  });

  it('through the one write path (in-memory store): decided on the fold of its stream; asked to do nothing with no stream, no state', async () => {
    const store = new MemoryEventStore();
    const db = {} as Db;
    expect(await handleQueueCommand({ db, store }, P, 'main', () => ({ type: 'FinishLanding', meta }))).to.equal(null);
    const s = await handleQueueCommand({ db, store }, P, 'main', () => build(entry(x, B, C)));
    expect(s!.built).to.have.length(1);
    const again = await handleQueueCommand({ db, store }, P, 'main', (st) => (st!.built.length ? null : build(entry(x, B, C))));
    expect(again!.built).to.have.length(1);
  });
});

describe('a CR in the merge queue (its own stream, pure)', () => {
  const opened: ChangeRequestEvent = parseChangeRequestEvent({
    type: 'ChangeRequestOpened',
    data: { cr_id: U, account_id: U, project_id: P, number: 1, title: 't', description: '', base_ref: 'main', head_ref: 'x', head_commit_sha: A, base_commit_sha: B, origin_session_id: null, created_by: U, metadata: {}, created_at: T },
  });
  const queued = { type: 'ChangeRequestQueued' as const, data: { head_sha: A, base_sha: B, queued_by: U, queued_at: T } };
  const state = (...events: ChangeRequestEvent[]): NonNullable<CrChecks> => foldCrChecks([opened, ...events], null)!;

  it('enters once per head; leaves once, only the entry it is about', () => {
    const s = state(queued);
    expect(s.checks.queue).to.include({ status: 'queued', head_sha: A });
    expect(decideCheckEvents({ type: 'RecordCheckEvents', events: [queued], meta }, s), 'the same head: one entry').to.deep.equal([]);
    expect(() => decideCheckEvents({ type: 'RecordCheckEvents', events: [{ ...queued, data: { ...queued.data, head_sha: C } }], meta }, s)).to.throw(/queued already/);
    const stale = { type: 'ChangeRequestDequeued' as const, data: { head_sha: C, reason: 'head_moved' as const, dequeued_at: T } };
    expect(decideCheckEvents({ type: 'RecordCheckEvents', events: [stale], meta }, s), 'another entry: nothing').to.deep.equal([]);
    const left = state(queued, { type: 'ChangeRequestDequeued', data: { head_sha: A, reason: 'conflict', context: 'README.md', ahead: [U], dequeued_at: T } });
    expect(left.checks.queue).to.include({ status: 'left', reason: 'conflict', context: 'README.md' });
  });

  it("queue runs are never superseded by the refresher, and a queued CR's own pair runs pause", () => {
    const qrun = { type: 'CheckQueued' as const, data: { run_id: randomUUID(), name: 'test', base_sha: C, head_sha: A, merge_sha: D, queued_at: T, via: 'queue' as const } };
    const s = state(queued, qrun);
    const out = decideChecks(s, { checks: [{ name: 'test' }], merge: { base: B, head: A, sha: D, problem: null }, at: T, nowMs: Date.parse(T), newRunId: randomUUID });
    expect(out, 'nothing cancelled, nothing queued on the pair').to.deep.equal([]);
    const after = state(queued, qrun, { type: 'ChangeRequestDequeued', data: { head_sha: A, reason: 'by_person', dequeued_at: T } });
    const resumed = decideChecks(after, { checks: [{ name: 'test' }], merge: { base: B, head: A, sha: D, problem: null }, at: T, nowMs: Date.parse(T), newRunId: randomUUID });
    expect(resumed.map((e) => e.type), 'out of the queue: the pair runs resume').to.deep.equal(['CheckQueued']);
  });
});
