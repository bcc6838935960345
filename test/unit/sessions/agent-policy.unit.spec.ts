import { expect } from 'chai';
import { DomainError } from '../../../domain/errors.js';
import { agentActionOf, assertMay, openInputFor, type AgentAction } from '../../../services/tokens/agent-policy.js';
import type { Principal } from '../../../services/tokens/service.js';

const SESSION = '3f2b8c1e-9a4d-4e5f-8b6a-1c2d3e4f5a6b';
const base = { token_id: 't', user_id: 'u', email: 'e', user_name: 'n', project_id: 'p' };
const agent: Principal = { ...base, grade: 'agent', sandbox_id: 'sbx', session_id: SESSION };
const person: Principal = { ...base, grade: 'person', sandbox_id: null, session_id: null };

const codeOf = (p: Principal, a: AgentAction): string | null => {
  try {
    assertMay(p, a);
    return null;
  } catch (err) {
    expect(err).to.be.instanceOf(DomainError);
    return (err as DomainError).code;
  }
};

describe('agent policy: what an agent-grade principal may do', () => {
  it('a person may do everything the policy names', () => {
    for (const a of [{ kind: 'cr.merge' }, { kind: 'other', what: 'x' }, { kind: 'cr.open', headRef: 'main' }] as AgentAction[]) expect(codeOf(person, a)).to.equal(null);
  });

  it('an agent: reads, its own CRs; never a merge; nothing else', () => {
    expect(codeOf(agent, { kind: 'read' })).to.equal(null);
    expect(codeOf(agent, { kind: 'cr.merge' })).to.equal('agent_cannot_merge');
    expect(codeOf(agent, { kind: 'other', what: 'write secrets' })).to.equal('agent_forbidden');
    expect(codeOf(agent, { kind: 'cr.open', headRef: SESSION })).to.equal(null);
    expect(codeOf(agent, { kind: 'cr.open', headRef: 'main' })).to.equal('agent_forbidden');
    expect(codeOf(agent, { kind: 'cr.open', headRef: SESSION, sessionId: 'other' })).to.equal('agent_forbidden');
    expect(codeOf(agent, { kind: 'cr.change', cr: { head_ref: SESSION, origin_session_id: SESSION } })).to.equal(null);
    expect(codeOf(agent, { kind: 'cr.change', cr: { head_ref: SESSION, origin_session_id: null } })).to.equal('agent_forbidden');
    expect(codeOf(agent, { kind: 'cr.change', cr: { head_ref: 'topic', origin_session_id: SESSION } })).to.equal('agent_forbidden');
    // An agent whose session is gone (its sandbox row removed) has no branch: no CR at all.
    const orphan: Principal = { ...agent, session_id: null };
    expect(codeOf(orphan, { kind: 'cr.open', headRef: SESSION })).to.equal('agent_forbidden');
  });

  it('an agent opens CRs for its own session, whatever it sent', () => {
    expect(openInputFor(agent, { head_ref: SESSION, title: 't' })).to.deep.equal({ head_ref: SESSION, title: 't', session_id: SESSION });
    expect(openInputFor(person, { head_ref: 'topic', title: 't' })).to.deep.equal({ head_ref: 'topic', title: 't' });
  });

  it('every request is classified; unknown writes are refused (deny by default)', () => {
    const P = '/projects/p';
    expect(agentActionOf('GET', `${P}/change-requests/1/diff`)).to.deep.equal({ kind: 'read' });
    expect(agentActionOf('GET', '/accounts/me')).to.deep.include({ kind: 'other' });
    expect(agentActionOf('POST', `${P}/change-requests`)).to.equal('route-checks');
    expect(agentActionOf('PATCH', `${P}/change-requests/1`)).to.equal('route-checks');
    expect(agentActionOf('POST', `${P}/change-requests/1/close`)).to.equal('route-checks');
    expect(agentActionOf('POST', `${P}/change-requests/1/reopen`)).to.equal('route-checks');
    expect(agentActionOf('POST', `${P}/change-requests/1/merge`)).to.deep.equal({ kind: 'cr.merge' });
    // Review: an agent comments (its route checks the CR); resolving is a person's.
    expect(agentActionOf('POST', `${P}/change-requests/1/comments`)).to.equal('route-checks');
    expect(agentActionOf('PATCH', `${P}/change-requests/1/comments/c`)).to.deep.equal({ kind: 'cr.review' });
    expect(agentActionOf('DELETE', `${P}/change-requests/1`)).to.deep.include({ kind: 'other' });
    for (const [method, path, what] of [
      ['PUT', `${P}/secrets/A`, 'write secrets'],
      ['POST', `${P}/sessions`, 'create, stop, restart, prompt or remove sessions'],
      ['POST', `${P}/sessions/s/refresh`, 'create, stop, restart, prompt or remove sessions'],
      ['POST', `${P}/statuses/abc`, 'post commit statuses'],
      ['POST', `${P}/cli-token`, 'mint tokens'],
      ['DELETE', P, 'change project settings'],
      ['POST', `${P}/something/new/entirely`, 'change project settings'],
      ['POST', `${P}/a/b/c/d`, 'do this'],
      ['POST', '/projects', 'create projects'],
    ] as const) {
      expect(agentActionOf(method, path), `${method} ${path}`).to.deep.equal({ kind: 'other', what });
    }
  });
});
