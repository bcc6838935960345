import { expect } from 'chai';
import { CR_ONLY_MESSAGE, checkPush, parseUpdates } from '../../../infra/git/pre-receive.js';
import { tokenFrom } from '../../../api/routes/git-http.js';

const Z = '0'.repeat(40);
const A = 'a'.repeat(40);
const B = 'b'.repeat(40);
const S = 'refs/heads/3f2b8c1e-9a4d-4e5f-8b6a-1c2d3e4f5a6b';
const facts = (empty: boolean, ancestor = true) => ({ empty: () => empty, isAncestor: () => ancestor });

describe('pre-receive rules', () => {
  it('the default branch: only the first push into an empty repository creates it', () => {
    expect(checkPush([{ old: Z, next: A, ref: 'refs/heads/main' }], 'main', facts(true))).to.deep.equal([]);
    expect(checkPush([{ old: Z, next: A, ref: 'refs/heads/main' }], 'main', facts(false))).to.deep.equal([`refs/heads/main: ${CR_ONLY_MESSAGE}`]);
    expect(checkPush([{ old: A, next: B, ref: 'refs/heads/main' }], 'main', facts(false))).to.have.length(1);
    expect(checkPush([{ old: A, next: Z, ref: 'refs/heads/main' }], 'main', facts(false))).to.have.length(1);
    // A repository whose default branch is `trunk`: `main` is just a branch.
    expect(checkPush([{ old: A, next: B, ref: 'refs/heads/main' }], 'trunk', facts(false))).to.deep.equal([]);
  });

  it('session branches: created freely, fast-forwarded, never rewritten or deleted', () => {
    expect(checkPush([{ old: Z, next: A, ref: S }], 'main', facts(false))).to.deep.equal([]);
    expect(checkPush([{ old: A, next: B, ref: S }], 'main', facts(false, true))).to.deep.equal([]);
    expect(checkPush([{ old: A, next: B, ref: S }], 'main', facts(false, false))[0]).to.contain('non-fast-forward refused');
    expect(checkPush([{ old: A, next: Z, ref: S }], 'main', facts(false))[0]).to.contain('deletion refused');
    // Other branches and tags are the pusher's own.
    expect(checkPush([{ old: A, next: Z, ref: 'refs/heads/topic' }, { old: A, next: B, ref: 'refs/tags/v1' }], 'main', facts(false, false))).to.deep.equal([]);
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
