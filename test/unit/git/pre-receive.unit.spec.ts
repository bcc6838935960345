import { expect } from 'chai';
import { AGENT_BRANCH_MESSAGE, CR_ONLY_MESSAGE, SVC_NAMESPACE_MESSAGE, checkPush, parseUpdates, pusherFrom, type Pusher } from '../../../infra/git/pre-receive.js';
import { tokenFrom } from '../../../api/routes/git-http.js';

const Z = '0'.repeat(40);
const A = 'a'.repeat(40);
const B = 'b'.repeat(40);
const S = 'refs/heads/3f2b8c1e-9a4d-4e5f-8b6a-1c2d3e4f5a6b';
const facts = (empty: boolean, ancestor = true) => ({ empty: () => empty, isAncestor: () => ancestor });
const PERSON: Pusher = { kind: 'person' };
const AGENT: Pusher = { kind: 'agent', branch: S.slice('refs/heads/'.length) };
const OTHER = 'refs/heads/00000000-0000-4000-8000-000000000000';

describe('pre-receive rules', () => {
  it('the default branch: only the first push into an empty repository creates it', () => {
    expect(checkPush([{ old: Z, next: A, ref: 'refs/heads/main' }], 'main', facts(true), PERSON)).to.deep.equal([]);
    expect(checkPush([{ old: Z, next: A, ref: 'refs/heads/main' }], 'main', facts(false), PERSON)).to.deep.equal([`refs/heads/main: ${CR_ONLY_MESSAGE}`]);
    expect(checkPush([{ old: A, next: B, ref: 'refs/heads/main' }], 'main', facts(false), PERSON)).to.have.length(1);
    expect(checkPush([{ old: A, next: Z, ref: 'refs/heads/main' }], 'main', facts(false), PERSON)).to.have.length(1);
    // A repository whose default branch is `trunk`: `main` is just a branch.
    expect(checkPush([{ old: A, next: B, ref: 'refs/heads/main' }], 'trunk', facts(false), PERSON)).to.deep.equal([]);
  });

  it('session branches: created freely, fast-forwarded, never rewritten or deleted', () => {
    expect(checkPush([{ old: Z, next: A, ref: S }], 'main', facts(false), PERSON)).to.deep.equal([]);
    expect(checkPush([{ old: A, next: B, ref: S }], 'main', facts(false, true), PERSON)).to.deep.equal([]);
    expect(checkPush([{ old: A, next: B, ref: S }], 'main', facts(false, false), PERSON)[0]).to.contain('non-fast-forward refused');
    expect(checkPush([{ old: A, next: Z, ref: S }], 'main', facts(false), PERSON)[0]).to.contain('deletion refused');
    // Other branches and tags are the pusher's own.
    expect(checkPush([{ old: A, next: Z, ref: 'refs/heads/topic' }, { old: A, next: B, ref: 'refs/tags/v1' }], 'main', facts(false, false), PERSON)).to.deep.equal([]);
  });

  it('refs/svc/* is nobody\'s: a person and an agent are both refused', () => {
    for (const who of [PERSON, AGENT]) {
      expect(checkPush([{ old: Z, next: A, ref: 'refs/svc/sessions/x/wip' }], 'main', facts(false), who)).to.deep.equal([`refs/svc/sessions/x/wip: ${SVC_NAMESPACE_MESSAGE}`]);
    }
  });

  it('an agent pushes only its own session branch: create or fast-forward, no deletion, no force', () => {
    expect(checkPush([{ old: Z, next: A, ref: S }], 'main', facts(false), AGENT)).to.deep.equal([]);
    expect(checkPush([{ old: A, next: B, ref: S }], 'main', facts(false, true), AGENT)).to.deep.equal([]);
    expect(checkPush([{ old: A, next: B, ref: S }], 'main', facts(false, false), AGENT)[0]).to.contain('non-fast-forward refused');
    expect(checkPush([{ old: A, next: Z, ref: S }], 'main', facts(false), AGENT)[0]).to.contain('deletion refused');
    // Another session's branch, a topic branch, a tag: refused, even as a fast-forward.
    for (const ref of [OTHER, 'refs/heads/topic', 'refs/tags/v1']) {
      expect(checkPush([{ old: A, next: B, ref }], 'main', facts(false, true), AGENT), ref).to.deep.equal([`${ref}: ${AGENT_BRANCH_MESSAGE} (${S})`]);
    }
    // The default branch: never, not even the first push into an empty repository.
    expect(checkPush([{ old: Z, next: A, ref: 'refs/heads/main' }], 'main', facts(true), AGENT)).to.deep.equal([`refs/heads/main: ${CR_ONLY_MESSAGE}`]);
    // One refused command among allowed ones: the refusal is reported (the hook refuses the whole push).
    expect(checkPush([{ old: A, next: B, ref: S }, { old: A, next: B, ref: OTHER }], 'main', facts(false, true), AGENT)).to.have.length(1);
  });

  it('the pusher comes from the server\'s environment; anything else fails closed', () => {
    expect(pusherFrom({ SVC_PUSHER: 'person' })).to.deep.equal(PERSON);
    expect(pusherFrom({ SVC_PUSHER: 'agent', SVC_PUSHER_BRANCH: AGENT.kind === 'agent' ? AGENT.branch : '' })).to.deep.equal(AGENT);
    expect(pusherFrom({})).to.equal(null);
    expect(pusherFrom({ SVC_PUSHER: 'agent' })).to.equal(null);
    expect(pusherFrom({ SVC_PUSHER: 'agent', SVC_PUSHER_BRANCH: 'main' })).to.equal(null);
    expect(pusherFrom({ SVC_PUSHER: 'root' })).to.equal(null);
  });

  it('parses the hook input strictly', () => {
    expect(parseUpdates(`${Z} ${A} refs/heads/main\n`)).to.deep.equal([{ old: Z, next: A, ref: 'refs/heads/main' }]);
    expect(parseUpdates(`${Z} ${A} main\n`)).to.equal(null);
    expect(parseUpdates(`${Z} xyz refs/heads/main\n`)).to.equal(null);
    expect(parseUpdates(`${Z} ${A} refs/heads/a b\n`)).to.equal(null);
    expect(parseUpdates('')).to.deep.equal([]);
  });

  it('smart HTTP takes the token from Basic (any user) or Bearer', () => {
    const b64 = (s: string) => Buffer.from(s).toString('base64');
    expect(tokenFrom(`Basic ${b64('x-access-token:svc_pat_abc')}`)).to.equal('svc_pat_abc');
    expect(tokenFrom(`Basic ${b64(':svc_pat_abc')}`)).to.equal('svc_pat_abc');
    expect(tokenFrom('Bearer svc_pat_abc')).to.equal('svc_pat_abc');
    expect(tokenFrom(`Basic ${b64('no-colon')}`)).to.equal(null);
    expect(tokenFrom(undefined)).to.equal(null);
    expect(tokenFrom('Basic !!!')).to.equal(null);
  });
});
