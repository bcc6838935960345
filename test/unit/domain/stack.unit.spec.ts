import { expect } from 'chai';
import {
  decide,
  evolve,
  foldChecks,
  missingChecks,
  parentOf,
  type ChangeRequestCommand,
  type ChangeRequestEvent,
  type StackNode,
} from '../../../domain/change-request/index.js';
import { isOwnBranch, parseStackBranch } from '../../../domain/stack-branches.js';
import { AGENT_STACK_BRANCH_MESSAGE, checkPush, type Pusher } from '../../../infra/git/pre-receive.js';
import { assertMay } from '../../../services/tokens/agent-policy.js';
import type { Principal } from '../../../services/tokens/service.js';
import { isDomainError } from '../../../domain/errors.js';
import { actor, at, meta } from '../../support/decider.js';

const S = '3f2b8c1e-9a4d-4e5f-8b6a-1c2d3e4f5a6b';
const T = '00000000-0000-4000-8000-000000000000';
const id = (n: number) => `00000000-0000-4000-8000-0000000000${String(n).padStart(2, '0')}`;
const node = (n: number, head: string, base: string, parent: string | null = null): StackNode => ({ cr_id: id(n), number: n, head_ref: head, base_ref: base, parent_cr_id: parent });

const thrown = (fn: () => unknown) => {
  try {
    fn();
  } catch (err) {
    return err;
  }
  throw new Error('expected a throw');
};

describe('stacked change requests: the rules', () => {
  it('parent: none, exactly one, ambiguous, or a cycle', () => {
    const a = node(1, 'a', 'main');
    expect(parentOf({ cr_id: id(9), head_ref: 'x', base_ref: 'main' }, [a])).to.deep.equal({ parent: null });
    expect(parentOf({ cr_id: id(9), head_ref: 'x', base_ref: 'a' }, [a])).to.deep.equal({ parent: id(1) });
    const two = parentOf({ cr_id: id(9), head_ref: 'x', base_ref: 'a' }, [a, node(2, 'a', 'dev')]);
    expect(two).to.include({ problem: 'ambiguous' });
    // a (base b) then b (base a): b would merge into a, which merges into b.
    const cycle = parentOf({ cr_id: id(9), head_ref: 'b', base_ref: 'a' }, [node(1, 'a', 'b')]);
    expect(cycle).to.include({ problem: 'cycle' });
    // Longer: c -> b -> a, and a retargeted onto c.
    const chain = [node(1, 'a', 'main'), node(2, 'b', 'a', id(1)), node(3, 'c', 'b', id(2))];
    expect(parentOf({ cr_id: id(1), head_ref: 'a', base_ref: 'c' }, chain)).to.include({ problem: 'cycle' });
  });

  it('open records the parent; a person\'s ambiguous open or retarget is a 400, the system\'s takes no parent', () => {
    const data = {
      cr_id: id(9), account_id: id(10), project_id: id(11), number: 9, title: 'top', description: '', base_ref: 'a', head_ref: 'x',
      head_commit_sha: null, base_commit_sha: null, origin_session_id: null, metadata: {},
    };
    const events = decide({ type: 'OpenChangeRequest', data, stack: [node(1, 'a', 'main')], meta }, null);
    expect(events.map((e) => e.type)).to.deep.equal(['ChangeRequestOpened', 'ChangeRequestStacked']);
    const state = events.reduce(evolve, null)!;
    expect(state.parent_cr_id).to.equal(id(1));
    const err = thrown(() => decide({ type: 'OpenChangeRequest', data, stack: [node(1, 'a', 'main'), node(2, 'a', 'main')], meta }, null));
    expect(isDomainError(err) && err.code).to.equal('validation');

    const retarget = (by: string, stack: StackNode[], base = 'b'): ChangeRequestCommand => ({ type: 'RetargetChangeRequest', data: { base_ref: base, base_commit_sha: null, by, stack }, meta });
    const ambiguous = [node(1, 'b', 'main'), node(2, 'b', 'main')];
    expect(isDomainError(thrown(() => decide(retarget(actor, ambiguous), state))) ? 'validation' : '').to.equal('validation');
    const sys = decide(retarget('system', ambiguous), state);
    expect(sys).to.have.length(1);
    expect(sys[0]).to.deep.include({ type: 'ChangeRequestRetargeted' });
    expect((sys[0]!.data as { parent_cr_id: string | null }).parent_cr_id).to.equal(null);
    // The same base and parent: nothing to record.
    expect(decide(retarget(actor, [node(1, 'a', 'main')], 'a'), state)).to.deep.equal([]);
    // Only open CRs move.
    const closed = evolve(state, { type: 'ChangeRequestClosed', data: { closed_by: actor, closed_at: at } });
    expect(isDomainError(thrown(() => decide(retarget(actor, []), closed))) && 'conflict').to.equal('conflict');
  });

  it('a person\'s retarget ends merge-when-green with base_changed; the system\'s keeps it', () => {
    const requested: ChangeRequestEvent = { type: 'ChangeRequestAutoMergeRequested', data: { requested_by: actor, head_sha: 'a'.repeat(40), requested_at: at } };
    const retargeted = (by: string): ChangeRequestEvent => ({ type: 'ChangeRequestRetargeted', data: { from: 'a', to: 'main', by, parent_cr_id: null, base_commit_sha: null, retargeted_at: at } });
    expect(foldChecks([requested, retargeted(actor)]).auto_merge).to.include({ status: 'cancelled', reason: 'base_changed' });
    expect(foldChecks([requested, retargeted('system')]).auto_merge).to.include({ status: 'pending' });
  });

  it('a pair left and come back to (retargeted away and back) runs its checks again: a cancelled run does not count', () => {
    const base = 'b'.repeat(40);
    const head = 'a'.repeat(40);
    const cr = { parent_cr_id: null, status: 'open', base_commit_sha: base, head_commit_sha: head } as never;
    const queued: ChangeRequestEvent = { type: 'CheckQueued', data: { run_id: id(1), name: 'test', base_sha: base, head_sha: head, merge_sha: head, queued_at: at } };
    const cancelled: ChangeRequestEvent = { type: 'CheckCancelled', data: { run_id: id(1), cancelled_at: at, reason: 'superseded' } };
    const passed: ChangeRequestEvent = { type: 'CheckPassed', data: { run_id: id(1), finished_at: at } };
    const pair = { base, head };
    expect(missingChecks({ cr, checks: foldChecks([queued]) }, [{ name: 'test' }], pair)).to.deep.equal([]);
    expect(missingChecks({ cr, checks: foldChecks([queued, passed]) }, [{ name: 'test' }], pair)).to.deep.equal([]);
    expect(missingChecks({ cr, checks: foldChecks([queued, cancelled]) }, [{ name: 'test' }], pair)).to.deep.equal([{ name: 'test' }]);
  });

  it('stack branch names: <session>-<n>, n from 1 to 20, no leading zero', () => {
    expect(parseStackBranch(`${S}-1`)).to.deep.equal({ session: S, n: 1 });
    expect(parseStackBranch(`${S}-20`)).to.deep.equal({ session: S, n: 20 });
    for (const bad of [`${S}-0`, `${S}-21`, `${S}-01`, `${S}/1`, `${S}-1-2`, 'main-1']) expect(parseStackBranch(bad), bad).to.equal(null);
    expect(isOwnBranch(S, S)).to.equal(true);
    expect(isOwnBranch(S, `${T}-1`)).to.equal(false);
  });

  it('pre-receive: an agent creates and fast-forwards its own stack branches; another agent\'s stack branch is refused', () => {
    const Z = '0'.repeat(40);
    const A = 'a'.repeat(40);
    const B = 'b'.repeat(40);
    const agent: Pusher = { kind: 'agent', branch: S };
    const facts = (ancestor = true) => ({ empty: () => false, isAncestor: () => ancestor });
    expect(checkPush([{ old: Z, next: A, ref: `refs/heads/${S}-1` }, { old: A, next: B, ref: `refs/heads/${S}-20` }], 'main', facts(), agent)).to.deep.equal([]);
    expect(checkPush([{ old: A, next: B, ref: `refs/heads/${S}-2` }], 'main', facts(false), agent)[0]).to.contain('non-fast-forward refused');
    expect(checkPush([{ old: A, next: Z, ref: `refs/heads/${S}-2` }], 'main', facts(), agent)[0]).to.contain('deletion refused');
    expect(checkPush([{ old: Z, next: A, ref: `refs/heads/${T}-1` }], 'main', facts(), agent)).to.deep.equal([`refs/heads/${T}-1: ${AGENT_STACK_BRANCH_MESSAGE} (refs/heads/${S}-<n>)`]);
    expect(checkPush([{ old: Z, next: A, ref: `refs/heads/${S}-21` }], 'main', facts(), agent)).to.have.length(1);
    expect(checkPush([{ old: Z, next: A, ref: `refs/heads/${S}/1` }], 'main', facts(), agent)).to.have.length(1);
  });

  it('agent policy: stack CRs on its own branches only, never a retarget', () => {
    const p = { grade: 'agent', session_id: S } as unknown as Principal;
    const may = (a: Parameters<typeof assertMay>[1]) => { try { assertMay(p, a); return true; } catch { return false; } };
    expect(may({ kind: 'cr.open', headRef: `${S}-1`, baseRef: S })).to.equal(true);
    expect(may({ kind: 'cr.open', headRef: `${S}-2`, baseRef: `${S}-1` })).to.equal(true);
    expect(may({ kind: 'cr.open', headRef: `${S}-1`, baseRef: 'main' })).to.equal(false);
    expect(may({ kind: 'cr.open', headRef: `${S}-1` })).to.equal(false);
    expect(may({ kind: 'cr.open', headRef: `${T}-1`, baseRef: T })).to.equal(false);
    expect(may({ kind: 'cr.change', cr: { head_ref: `${S}-1`, origin_session_id: S } })).to.equal(true);
    expect(may({ kind: 'cr.retarget' })).to.equal(false);
  });
});
