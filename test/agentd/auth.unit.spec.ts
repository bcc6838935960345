import { createHmac } from 'node:crypto';
import { expect } from 'chai';
import {
  bearerMatches,
  cookieValues,
  signUserContext,
  stripCookie,
  takeQueryParam,
  verifyUserContext,
} from '../../agentd/auth.js';

const KEY = 'k'.repeat(32);
const NOW = 1_800_000_000;

describe('agentd auth: signed user context', () => {
  it('accepts a value signed with SVC_TOKEN before its expiry', () => {
    const v = signUserContext(KEY, { sub: 'u1', exp: NOW + 60 });
    expect(verifyUserContext(KEY, v, 4096, NOW)).to.deep.equal({ ok: true, context: { sub: 'u1', exp: NOW + 60 } });
  });

  it('is base64url(JSON).base64url(HMAC-SHA256(key, payload)) as contracts.md defines', () => {
    const payload = Buffer.from(JSON.stringify({ sub: 'u1', exp: NOW + 60 })).toString('base64url');
    const sig = createHmac('sha256', KEY).update(payload).digest('base64url');
    expect(verifyUserContext(KEY, `${payload}.${sig}`, 1, NOW).ok).to.equal(true);
  });

  it('refuses an expired value', () => {
    const v = signUserContext(KEY, { sub: 'u1', exp: NOW });
    expect(verifyUserContext(KEY, v, 4096, NOW)).to.deep.equal({ ok: false, reason: 'expired' });
  });

  it('refuses a value signed with another key', () => {
    const v = signUserContext('other-key-other-key', { sub: 'u1', exp: NOW + 60 });
    expect(verifyUserContext(KEY, v, 4096, NOW)).to.deep.equal({ ok: false, reason: 'bad_signature' });
  });

  it('refuses a tampered payload', () => {
    const v = signUserContext(KEY, { sub: 'u1', exp: NOW + 60 });
    const forged = Buffer.from(JSON.stringify({ sub: 'admin', exp: NOW + 60 })).toString('base64url');
    expect(verifyUserContext(KEY, `${forged}.${v.split('.')[1]}`, 4096, NOW).ok).to.equal(false);
  });

  it('honours the optional port binding', () => {
    const v = signUserContext(KEY, { sub: 'u1', exp: NOW + 60, port: 3000 });
    expect(verifyUserContext(KEY, v, 3000, NOW).ok).to.equal(true);
    expect(verifyUserContext(KEY, v, 3001, NOW)).to.deep.equal({ ok: false, reason: 'wrong_port' });
  });

  for (const bad of ['', '.', 'abc', 'a.b.c', '!!!.abc', 'eyJ9.', 'x'.repeat(5000)]) {
    it(`refuses the malformed value ${JSON.stringify(bad.slice(0, 12))}`, () => {
      expect(verifyUserContext(KEY, bad, 4096, NOW).ok).to.equal(false);
    });
  }

  it('refuses a correctly signed payload that is not a context object', () => {
    const payload = Buffer.from('{"sub":1}').toString('base64url');
    const sig = createHmac('sha256', KEY).update(payload).digest('base64url');
    expect(verifyUserContext(KEY, `${payload}.${sig}`, 1, NOW)).to.deep.equal({ ok: false, reason: 'malformed' });
  });
});

describe('agentd auth: bearer, cookies, query', () => {
  it('matches only the exact bearer token', () => {
    expect(bearerMatches(`Bearer ${KEY}`, KEY)).to.equal(true);
    expect(bearerMatches(`bearer ${KEY}`, KEY)).to.equal(true);
    expect(bearerMatches(`Bearer ${KEY}x`, KEY)).to.equal(false);
    expect(bearerMatches(`Basic ${KEY}`, KEY)).to.equal(false);
    expect(bearerMatches(undefined, KEY)).to.equal(false);
    expect(bearerMatches('Bearer', KEY)).to.equal(false);
  });

  it('reads and strips one cookie, keeping the others', () => {
    const h = 'a=1; svc_ctx=abc.def; b=2';
    expect(cookieValues(h, 'svc_ctx')).to.deep.equal(['abc.def']);
    expect(stripCookie(h, 'svc_ctx')).to.equal('a=1; b=2');
    expect(stripCookie('svc_ctx=x', 'svc_ctx')).to.equal(undefined);
  });

  it('takes svc_ctx out of a query without re-encoding the rest', () => {
    expect(takeQueryParam('a=b%20c&svc_ctx=v.s&d=e+f', 'svc_ctx')).to.deep.equal({ value: 'v.s', rest: 'a=b%20c&d=e+f' });
    expect(takeQueryParam('a=1', 'svc_ctx')).to.deep.equal({ value: undefined, rest: 'a=1' });
    expect(takeQueryParam('svc_ctx=%E0%A4%A', 'svc_ctx').rest).to.equal('');
  });
});
