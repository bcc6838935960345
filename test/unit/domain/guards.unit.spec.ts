import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import {
  assertCanMerge,
  assertCanOpen,
  canMerge,
  decide,
  decideChecks,
  evolve,
  foldChecks,
  parseChangeRequestEvent,
  type ChangeRequest,
} from '../../../domain/change-request/index.js';
import { DomainError, domainErrorFrom, ERROR_REASONS, isErrorReason } from '../../../domain/errors.js';

const A = 'a'.repeat(40);
const B = 'b'.repeat(40);
const U = randomUUID();
const T = '2026-11-28T12:00:00.000Z';

const opened = (): ChangeRequest =>
  evolve(null, parseChangeRequestEvent({
    type: 'ChangeRequestOpened',
    data: { cr_id: randomUUID(), account_id: U, project_id: U, number: 3, title: 't', description: '', base_ref: 'main', head_ref: 'x', head_commit_sha: A, base_commit_sha: B, origin_session_id: null, created_by: U, metadata: {}, created_at: T },
  }))!;

/** The error `fn` throws (undefined if none). */
const thrown = (fn: () => unknown): DomainError | undefined => {
  try {
    fn();
  } catch (e) {
    return e as DomainError;
  }
  return undefined;
};

describe('domain guards: services ask the rules instead of inventing commands', () => {
  it('canMerge / assertCanMerge give exactly the answer the decider gives a merge', () => {
    const merge = (cr: ChangeRequest) => () =>
      decide({ type: 'MergeChangeRequest', data: { strategy: 'fast-forward', base_commit_sha: B, head_commit_sha: A, merge_commit_sha: A }, meta: { actor: U, now: new Date(T) } }, cr);
    const open = opened();
    for (const cr of [open, { ...open, status: 'closed' as const }, { ...open, status: 'merged' as const }]) {
      const guard = thrown(() => assertCanMerge(cr));
      const decider = thrown(merge(cr));
      expect(canMerge(cr)).to.equal(guard === undefined);
      expect(guard?.message).to.equal(decider?.message);
      expect(guard?.code).to.equal(decider?.code);
    }
    expect(thrown(() => assertCanMerge({ ...open, status: 'closed' }))?.message).to.equal('Cannot merge change request #3: it is closed; reopen it first.');
  });

  it('assertCanOpen is the open rule, before any number is allocated', () => {
    expect(thrown(() => assertCanOpen({ title: ' ', head_ref: 'x', base_ref: 'main' }))?.code).to.equal('validation');
    expect(thrown(() => assertCanOpen({ title: 't', head_ref: 'main', base_ref: 'main' }))?.details.issues).to.deep.equal([{ path: 'head_ref', message: "head_ref must differ from base_ref (both are 'main')." }]);
    expect(thrown(() => assertCanOpen({ title: 't', head_ref: 'x', base_ref: 'main' }))).to.equal(undefined);
  });

  it('decideChecks: queues what is missing on the merge result, errors it when the pair does not merge, cancels older pairs', () => {
    let n = 0;
    const ids = ['11111111-1111-4111-8111-111111111111', '22222222-2222-4222-8222-222222222222'];
    const input = (merge: { sha: string | null; problem: string | null } | null) => ({
      checks: [{ name: 'test' }, { name: 'lint' }], merge: merge && { base: B, head: A, ...merge }, at: T, nowMs: Date.parse(T), newRunId: () => ids[n++ % 2]!,
    });
    const s = { cr: opened(), checks: foldChecks([]) };
    expect(decideChecks(s, input({ sha: A, problem: null })).map((e) => [e.type, (e.data as { name?: string }).name])).to.deep.equal([['CheckQueued', 'test'], ['CheckQueued', 'lint']]);
    expect(decideChecks(s, input({ sha: null, problem: 'conflicts' })).map((e) => e.type)).to.deep.equal(['CheckQueued', 'CheckErrored', 'CheckQueued', 'CheckErrored']);
    expect(decideChecks(s, input(null)), 'no merge result read: nothing queued').to.deep.equal([]);
    const older = foldChecks([{ type: 'CheckQueued', data: { run_id: ids[0]!, name: 'test', base_sha: A, head_sha: B, merge_sha: B, queued_at: T } }]);
    expect(decideChecks({ ...s, checks: older }, input(null))).to.deep.equal([{ type: 'CheckCancelled', data: { run_id: ids[0]!, cancelled_at: T, reason: 'superseded' } }]);
  });
});

describe('error reasons: a closed list', () => {
  it('a reason or code from the wire that this build does not know becomes a plain 503, never an unchecked cast', () => {
    expect(domainErrorFrom({ code: 'merge_failed', reason: 'Merge failed', message: 'm', details: { conflicts: [] } })).to.include({ code: 'merge_failed', reason: 'Merge failed' });
    expect(domainErrorFrom({ code: 'teapot', reason: 'Merge failed', message: 'm' })).to.include({ code: 'unavailable', reason: 'Unavailable', message: 'm' });
    expect(domainErrorFrom({ code: 'conflict', reason: 'Something new', message: 'm' })).to.include({ code: 'conflict', reason: 'Unavailable' });
    expect(isErrorReason('Push rejected')).to.equal(true);
    expect(isErrorReason('branch_failed'), 'a session failure code is not an error reason').to.equal(false);
    expect(new Set(ERROR_REASONS).size, 'no reason listed twice').to.equal(ERROR_REASONS.length);
  });
});
