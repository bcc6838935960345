import { expect } from 'chai';
import {
  decide,
  evolve,
  fold,
  type SessionCommand,
  type SessionEvent,
  type SessionState,
} from '../../../domain/session/index.js';
import { actor, at, meta, specFor } from '../../support/decider.js';

const given = specFor<SessionState, SessionEvent, SessionCommand>({ decide, evolve, initial: null });

const sid = '00000000-0000-4000-8000-000000000001';
const sb1 = '00000000-0000-4000-8000-0000000000b1';
const sb2 = '00000000-0000-4000-8000-0000000000b2';
const t0 = '2026-01-01T00:00:00.000Z';

const created: SessionEvent = {
  type: 'SessionCreated',
  data: {
    session_id: sid,
    account_id: '00000000-0000-4000-8000-000000000002',
    project_id: '00000000-0000-4000-8000-000000000003',
    base_ref: 'main',
    agent: 'build',
    model: null,
    prompt: 'hello',
    trigger: null,
    created_by: actor,
    created_at: t0,
  },
};
const cut: SessionEvent = { type: 'SessionBranchCut', data: { base_commit_sha: 'a'.repeat(40), at: t0 } };
const requested: SessionEvent = { type: 'SandboxRequested', data: { sandbox_id: sb1, provider: 'process', at: t0 } };
const active: SessionEvent = { type: 'SandboxActive', data: { sandbox_id: sb1, url: 'http://127.0.0.1:1', ref: '42', at: t0 } };
const running: SessionEvent = { type: 'SessionRunning', data: { sandbox_id: sb1, at: t0 } };
const stopped: SessionEvent = { type: 'SessionStopped', data: { reason: 'user', by: actor, at: t0 } };
const failed: SessionEvent = { type: 'SessionFailed', data: { error: { code: 'timeout', message: 'slow', at: t0 }, at: t0 } };
const removed: SessionEvent = { type: 'SessionRemoved', data: { by: actor, at: t0 } };

describe('session decider (the spec\'s session status and sandbox state tables)', () => {
  it('create: a new session is provisioning, on a branch named by its id', () => {
    given([]).when({ type: 'CreateSession', data: { ...created.data, created_by: undefined, created_at: undefined } as never, meta }).then((events) => {
      expect(events).to.have.length(1);
      const s = fold(events)!;
      expect(s.status).to.equal('provisioning');
      expect(s.branch).to.equal(sid);
      expect(s.created_at).to.equal(at);
    });
  });

  it('create twice is a conflict; an empty agent is a 400', () => {
    given([created]).when({ type: 'CreateSession', data: created.data as never, meta }).thenThrows('conflict');
    given([]).when({ type: 'CreateSession', data: { ...created.data, agent: ' ' } as never, meta }).thenThrows('validation');
  });

  it('provisioning: branch cut once, sandbox requested, active, running', () => {
    given([created]).when({ type: 'RecordBranchCut', data: { base_commit_sha: 'a'.repeat(40) }, meta }).then([
      { type: 'SessionBranchCut', data: { base_commit_sha: 'a'.repeat(40), at } },
    ]);
    given([created, cut]).when({ type: 'RecordBranchCut', data: { base_commit_sha: 'b'.repeat(40) }, meta }).then([]);
    given([created, cut]).when({ type: 'RequestSandbox', data: { sandbox_id: sb1, provider: 'process' }, meta }).then([
      { type: 'SandboxRequested', data: { sandbox_id: sb1, provider: 'process', at } },
    ]);
    given([created, cut, requested]).when({ type: 'RecordSandboxActive', data: { sandbox_id: sb1, url: 'u', ref: 'r' }, meta }).then([
      { type: 'SandboxActive', data: { sandbox_id: sb1, url: 'u', ref: 'r', at } },
    ]);
    given([created, cut, requested, active]).when({ type: 'MarkRunning', data: { sandbox_id: sb1 }, meta }).then([
      { type: 'SessionRunning', data: { sandbox_id: sb1, at } },
    ]);
    given([created, cut, requested, active, running]).when({ type: 'MarkRunning', data: { sandbox_id: sb1 }, meta }).then([]);
  });

  it('a sandbox requested before a crash is given up when another is requested', () => {
    given([created, cut, requested]).when({ type: 'RequestSandbox', data: { sandbox_id: sb2, provider: 'process' }, meta }).then((events) => {
      expect(events.map((e) => e.type)).to.deep.equal(['SandboxErrored', 'SandboxRequested']);
      const s = fold(events, fold([created, cut, requested]))!;
      expect(s.sandboxes.map((x) => x.state)).to.deep.equal(['error', 'provisioning']);
    });
    given([created, cut, requested, active]).when({ type: 'RequestSandbox', data: { sandbox_id: sb2, provider: 'process' }, meta }).thenThrows('conflict');
  });

  it('running a sandbox that is not the current one is refused', () => {
    given([created, cut, requested]).when({ type: 'RecordSandboxActive', data: { sandbox_id: sb2, url: 'u', ref: 'r' }, meta }).thenThrows('conflict');
    given([created, cut, requested]).when({ type: 'MarkRunning', data: { sandbox_id: sb1 }, meta }).thenThrows('conflict');
  });

  it('a provisioning error fails the session and errors its sandbox', () => {
    given([created, cut, requested, active]).when({ type: 'FailSession', data: { error: { code: 'timeout', message: 'slow' } }, meta }).then((events) => {
      expect(events.map((e) => e.type)).to.deep.equal(['SandboxErrored', 'SessionFailed']);
      const s = fold([created, cut, requested, active, ...events])!;
      expect(s.status).to.equal('failed');
      expect(s.error).to.deep.equal({ code: 'timeout', message: 'slow', at });
    });
    given([created, cut, requested, active, running]).when({ type: 'FailSession', data: { error: { code: 'x', message: 'y' } }, meta }).thenThrows('conflict');
  });

  it('running → stopped by the user or the idle sweep; stopping again changes nothing', () => {
    given([created, cut, requested, active, running]).when({ type: 'StopSession', data: { reason: 'idle' }, meta }).then([
      { type: 'SessionStopped', data: { reason: 'idle', by: null, at } },
    ]);
    given([created, cut, requested, active, running, stopped]).when({ type: 'StopSession', data: { reason: 'user' }, meta }).then([]);
    // The sweep never stops a session that is still provisioning.
    given([created]).when({ type: 'StopSession', data: { reason: 'idle' }, meta }).then([]);
  });

  it('restart archives the old sandbox and provisions again; not while provisioning', () => {
    given([created, cut, requested, active, running, stopped]).when({ type: 'RestartSession', meta }).then((events) => {
      expect(events.map((e) => e.type)).to.deep.equal(['SandboxArchived', 'SessionRestarted']);
      const s = fold([created, cut, requested, active, running, stopped, ...events])!;
      expect(s.status).to.equal('provisioning');
      expect(s.sandboxes[0]!.state).to.equal('archived');
    });
    given([created, cut, requested, active, running, failed]).when({ type: 'RestartSession', meta }).then((events) => {
      expect(fold(events, fold([created, cut, requested, active, running, failed]))!.error).to.equal(null);
    });
    given([created]).when({ type: 'RestartSession', meta }).thenThrows('conflict');
  });

  it('a removed session is gone for every command', () => {
    given([created, removed]).when({ type: 'StopSession', data: { reason: 'user' }, meta }).thenThrows('not_found');
    given([created, removed]).when({ type: 'RemoveSession', meta }).thenThrows('not_found');
    given([]).when({ type: 'StopSession', data: { reason: 'user' }, meta }).thenThrows('not_found');
  });

  it('activity is recorded at most once per interval, only while running', () => {
    const later = { actor, now: new Date(Date.parse(t0) + 61_000) };
    given([created, cut, requested, active, running]).when({ type: 'RecordActivity', data: { min_interval_ms: 60_000 }, meta: later }).then([
      { type: 'SessionActivity', data: { at: later.now.toISOString() } },
    ]);
    given([created, cut, requested, active, running]).when({ type: 'RecordActivity', data: { min_interval_ms: 120_000 }, meta: later }).then([]);
    given([created, cut, requested, active, running, stopped]).when({ type: 'RecordActivity', data: { min_interval_ms: 0 }, meta: later }).then([]);
  });
});
