import { expect } from 'chai';
import { decide, evolve, fold, parseSessionEvent, type SessionCommand, type SessionEvent, type SessionState } from '../../../domain/session/index.js';
import { actor, at, meta, specFor } from '../../support/decider.js';

/** Pause and resume in the session decider: SessionPaused / SessionResumed (docs/sessions.md). */
const given = specFor<SessionState, SessionEvent, SessionCommand>({ decide, evolve, initial: null });
const sid = '00000000-0000-4000-8000-000000000001';
const sb1 = '00000000-0000-4000-8000-0000000000b1';
const sb2 = '00000000-0000-4000-8000-0000000000b2';
const t0 = '2026-01-01T00:00:00.000Z';
const wip = 'b'.repeat(40);
const created: SessionEvent = {
  type: 'SessionCreated',
  data: { session_id: sid, account_id: '00000000-0000-4000-8000-000000000002', project_id: '00000000-0000-4000-8000-000000000003', base_ref: 'main', agent: 'build', model: null, prompt: null, trigger: null, created_by: actor, created_at: t0 },
};
const requested = (id: string): SessionEvent => ({ type: 'SandboxRequested', data: { sandbox_id: id, provider: 'process', at: t0 } });
const restarted: SessionEvent = { type: 'SessionRestarted', data: { by: actor, at: t0 } };
const stopped: SessionEvent = { type: 'SessionStopped', data: { reason: 'user', by: actor, at: t0 } };

describe('domain/session: pause and resume events', () => {
  it('RecordPaused records what was saved, skipped files included', () =>
    given([created, requested(sb1), stopped])
      .when({ type: 'RecordPaused', data: { wip_sha: wip, skipped: [{ path: 'big.bin', bytes: 9, reason: 'over SVC_SESSION_WIP_MAX_BYTES' }], conversation: true }, meta })
      .then([{ type: 'SessionPaused', data: { wip_sha: wip, skipped: [{ path: 'big.bin', bytes: 9, reason: 'over SVC_SESSION_WIP_MAX_BYTES' }], conversation: true, at } }]));

  it('RecordResumed only for the current sandbox: a late report from an older one changes nothing', () => {
    given([created, requested(sb1), stopped, restarted, requested(sb2)])
      .when({ type: 'RecordResumed', data: { sandbox_id: sb2, wip_sha: wip, conversation: 'version_mismatch' }, meta })
      .then([{ type: 'SessionResumed', data: { sandbox_id: sb2, wip_sha: wip, conversation: 'version_mismatch', at } }]);
    given([created, requested(sb1), stopped, restarted, requested(sb2)])
      .when({ type: 'RecordResumed', data: { sandbox_id: sb1, wip_sha: wip, conversation: 'restored' }, meta })
      .then([]);
  });

  it('RecordResumed once per sandbox: a second read by the same sandbox records nothing; the next sandbox resumes again', () => {
    const resumed = (id: string): SessionEvent => ({ type: 'SessionResumed', data: { sandbox_id: id, wip_sha: wip, conversation: 'restored', at } });
    given([created, requested(sb1), stopped, restarted, requested(sb2), resumed(sb2)])
      .when({ type: 'RecordResumed', data: { sandbox_id: sb2, wip_sha: wip, conversation: 'restored' }, meta })
      .then([]);
    given([created, requested(sb1), resumed(sb1), stopped, restarted, requested(sb2)])
      .when({ type: 'RecordResumed', data: { sandbox_id: sb2, wip_sha: wip, conversation: 'restored' }, meta })
      .then([{ type: 'SessionResumed', data: { sandbox_id: sb2, wip_sha: wip, conversation: 'restored', at } }]);
  });

  it('neither event changes the session beyond updated_at, so a replay gives the same row', () => {
    const before = fold([created, requested(sb1), stopped])!;
    const paused = parseSessionEvent({ type: 'SessionPaused', data: { wip_sha: null, skipped: [], conversation: false, at } });
    const after = fold([paused], before)!;
    expect({ ...after, updated_at: before.updated_at }).to.deep.equal(before);
    expect(() => parseSessionEvent({ type: 'SessionPaused', data: { wip_sha: 'HEAD', skipped: [], conversation: false, at } })).to.throw();
  });
});
