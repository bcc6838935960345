import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { handle } from '../../../infra/event-sourcing/handler.js';
import { MemoryEventStore } from '../../../infra/event-sourcing/memory-store.js';
import { changeRequestDecider } from '../../../domain/change-request/index.js';
import { sessionDecider } from '../../../domain/session/index.js';
import { crProjection, crStream } from '../../../projections/change-requests.js';
import { sessionProjection, sessionStream } from '../../../projections/sessions.js';
import { applyTips, type CrDeps } from '../../../services/change-requests/service.js';
import { appendCheckEvents } from '../../../services/checks/stream.js';
import type { ProjectRecord } from '../../../domain/project.js';
import { notFound } from '../../../domain/errors.js';

const A = 'a'.repeat(40);
const B = 'b'.repeat(40);
const C = 'c'.repeat(40);
const U = randomUUID();
/** The error `p` rejects with (undefined if it resolves). */
const failure = (p: Promise<unknown>): Promise<Error | undefined> => p.then(() => undefined, (e: Error) => e);
const meta = (now = new Date('2026-11-28T12:00:00Z')) => ({ actor: U, now });

/** A CR opened in `store` through the handler (the stream must not exist). */
async function opened(store: MemoryEventStore, projectId: string) {
  const crId = randomUUID();
  const data = {
    cr_id: crId, account_id: randomUUID(), project_id: projectId, number: 1, title: 'T', description: '', base_ref: 'main', head_ref: 'feature',
    head_commit_sha: A, base_commit_sha: B, origin_session_id: null, metadata: {},
  };
  const r = await handle(crStream(projectId, crId), changeRequestDecider, crProjection, {
    store, load: 'new', missing: () => notFound('Change request'), command: () => ({ type: 'OpenChangeRequest' as const, data, meta: meta() }),
  });
  return r.state!;
}

describe('the one write path over the in-memory event store', () => {
  const projectId = randomUUID();

  it('a new stream is opened once: the append at version 0 refuses a second open', async () => {
    const store = new MemoryEventStore();
    const cr = await opened(store, projectId);
    const again = handle(crStream(projectId, cr.cr_id), changeRequestDecider, crProjection, {
      store, load: 'new', missing: () => notFound('Change request'),
      command: () => ({ type: 'OpenChangeRequest' as const, data: { ...cr, number: 2 }, meta: meta() }),
    });
    expect((await failure(again))?.message).to.match(/changed concurrently/);
    expect(await store.read(crStream(projectId, cr.cr_id))).to.have.length(1);
  });

  it('row mode decides on the kept row, stream mode on the fold: the same state after the same commands', async () => {
    const store = new MemoryEventStore();
    const cr = await opened(store, projectId);
    const stream = crStream(projectId, cr.cr_id);
    for (const type of ['CloseChangeRequest', 'ReopenChangeRequest'] as const) {
      await handle(stream, changeRequestDecider, crProjection, { store, load: 'row', missing: () => notFound('CR'), command: () => ({ type, meta: meta() }) });
    }
    const byFold = await handle(stream, changeRequestDecider, crProjection, { store, load: 'stream', missing: () => notFound('CR'), command: () => null });
    const row = await store.row(crProjection.rows!, stream);
    expect(row).to.deep.equal({ ...byFold.state, stream_version: 3 });
    expect(byFold.version).to.equal(3);
    // A refusal is the decider's, whichever way the state was loaded.
    const reopen = () => ({ type: 'ReopenChangeRequest' as const, meta: meta() });
    expect((await failure(handle(stream, changeRequestDecider, crProjection, { store, load: 'row', missing: () => notFound('CR'), command: reopen })))?.message).to.match(/already open/);
    expect((await failure(handle(stream, changeRequestDecider, crProjection, { store, load: 'stream', missing: () => notFound('CR'), command: reopen })))?.message).to.match(/already open/);
  });

  it('a failure after the append in the same transaction stores nothing', async () => {
    const store = new MemoryEventStore();
    const sessionId = randomUUID();
    const create = () => ({ type: 'CreateSession' as const, data: { session_id: sessionId, account_id: randomUUID(), project_id: projectId, base_ref: 'main', agent: 'a', model: null, prompt: null, trigger: null }, meta: meta() });
    const failing = handle(sessionStream(sessionId), sessionDecider, sessionProjection, {
      store, missing: () => notFound('Session'), command: create,
      inTx: async () => {
        throw new Error('the work that commits with the event failed');
      },
    });
    expect((await failure(failing))?.message).to.match(/commits with the event/);
    expect(await store.read(sessionStream(sessionId))).to.deep.equal([]);
    const ok = await handle(sessionStream(sessionId), sessionDecider, sessionProjection, { store, missing: () => notFound('Session'), command: create });
    expect(ok.state?.status).to.equal('provisioning');
    const [e] = await store.read(sessionStream(sessionId));
    expect(e, 'the stream belongs to the project the session names').to.include({ project_id: projectId, stream_position: 1, type: 'SessionCreated' });
    expect((await failure(handle(sessionStream(randomUUID()), sessionDecider, sessionProjection, { store, missing: () => notFound('Session'), command: () => null })))?.message).to.match(/not found/i);
  });
});

describe('a CR service over the in-memory event store', () => {
  it('applyTips records a Refreshed event when the tips moved, and never writes tips read before the CR changed over it', async () => {
    const store = new MemoryEventStore();
    const projectId = randomUUID();
    const cr = await opened(store, projectId);
    const deps = { store, db: {} as CrDeps['db'], commands: {} as CrDeps['commands'], now: () => new Date('2026-11-28T12:01:00Z') } as unknown as CrDeps;
    const project = { project_id: projectId } as ProjectRecord;
    const next = await applyTips(deps, project, cr, { feature: C, main: B }, U);
    expect(next).to.include({ head_commit_sha: C, base_commit_sha: B, updated_at: '2026-11-28T12:01:00.000Z' });
    const events = await store.read(crStream(projectId, cr.cr_id));
    expect(events.map((e) => e.type)).to.deep.equal(['ChangeRequestOpened', 'ChangeRequestRefreshed']);
    // Tips read against the CR as it was before that refresh are stale: nothing is written.
    const stale = await applyTips(deps, project, cr, { feature: 'd'.repeat(40), main: B }, U);
    expect(stale.head_commit_sha).to.equal(C);
    expect(await store.read(crStream(projectId, cr.cr_id))).to.have.length(2);
    // Unmoved tips write nothing either.
    await applyTips(deps, project, next, { feature: C, main: B }, U);
    expect(store.appends).to.equal(2);
  });
});

describe('the checks service over the in-memory event store', () => {
  it('appendCheckEvents decides on the folded CR and checks; the decider admits a run once and refuses an unknown one', async () => {
    const store = new MemoryEventStore();
    const projectId = randomUUID();
    const cr = await opened(store, projectId);
    const deps = { store, db: {} as CrDeps['db'], commands: {} as CrDeps['commands'], now: () => new Date('2026-11-28T12:02:00Z') } as unknown as CrDeps;
    const run_id = randomUUID();
    const at = '2026-11-28T12:02:00.000Z';
    const queued = await appendCheckEvents(deps, projectId, cr.cr_id, 'system', () => [{ type: 'CheckQueued', data: { run_id, name: 'test', base_sha: B, head_sha: A, merge_sha: A, queued_at: at } }]);
    expect(queued.appended.map((e) => e.type)).to.deep.equal(['CheckQueued']);
    expect(queued.state.version, 'the state decided on').to.equal(1);
    const start = () => appendCheckEvents(deps, projectId, cr.cr_id, 'system', (s) =>
      s.checks.runs.find((r) => r.run_id === run_id)?.status === 'queued' ? [{ type: 'CheckStarted', data: { run_id, started_at: at } }] : []);
    expect((await start()).appended).to.have.length(1);
    expect((await start()).appended, 'started once').to.deep.equal([]);
    const unknown = appendCheckEvents(deps, projectId, cr.cr_id, 'system', () => [{ type: 'CheckPassed', data: { run_id: randomUUID(), finished_at: at } }]);
    expect((await failure(unknown))?.message).to.match(/not found/i);
    const stream = await store.read(crStream(projectId, cr.cr_id));
    expect(stream.map((e) => e.type)).to.deep.equal(['ChangeRequestOpened', 'CheckQueued', 'CheckStarted']);
  });
});
