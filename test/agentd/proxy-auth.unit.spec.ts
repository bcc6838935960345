import type { IncomingMessage } from 'node:http';
import { expect } from 'chai';
import { signUserContext } from '../../agentd/auth.js';
import { HttpError } from '../../agentd/http-util.js';
import { authorizeProxy, downstreamResponseHeaders, parseTarget, upstreamRequestHeaders } from '../../agentd/proxy-auth.js';

const KEY = 'k'.repeat(32);
const NOW = 1_800_000_000;

const fakeReq = (url: string, headers: Record<string, string>) =>
  ({ url, headers, socket: { remoteAddress: '10.0.0.9' } }) as unknown as IncomingMessage;

function statusOf(fn: () => unknown): number | undefined {
  try {
    fn();
  } catch (err) {
    return err instanceof HttpError ? err.status : -1;
  }
  return undefined;
}

describe('agentd proxy targets', () => {
  it('routes /proxy/{port}/rest to that port and the rest to the runtime', () => {
    expect(parseTarget('/proxy/3000/a/b?x=1', 4096, 8000)).to.include({ port: 3000, path: '/a/b?x=1', kind: 'port' });
    expect(parseTarget('/proxy/3000', 4096, 8000)).to.include({ port: 3000, path: '/' });
    expect(parseTarget('/session?svc_ctx=v.s&a=1', 4096, 8000)).to.include({ port: 4096, path: '/session?a=1', kind: 'runtime' });
    expect(parseTarget('/?svc_ctx=v.s', 4096, 8000).path).to.equal('/');
  });

  it("refuses the daemon's own port with 403 and bad ports with 400", () => {
    expect(statusOf(() => parseTarget('/proxy/8000/x', 4096, 8000))).to.equal(403);
    for (const u of ['/proxy/0/', '/proxy/65536/', '/proxy/abc', '/proxy', '/proxy/', '*', 'http://evil/x']) {
      expect(statusOf(() => parseTarget(u, 4096, 8000)), u).to.equal(400);
    }
  });

  it('takes the context from the header, else the query (then sets a cookie), else the cookie', () => {
    const v = signUserContext(KEY, { sub: 'u', exp: NOW + 100 });
    const t = parseTarget('/proxy/3000/', 4096, 8000);
    expect(authorizeProxy(fakeReq('/', { 'x-svc-user-context': v }), t, KEY, NOW).setCookie).to.equal(undefined);
    const q = authorizeProxy(fakeReq(`/proxy/3000/?svc_ctx=${v}`, {}), t, KEY, NOW);
    expect(q.setCookie).to.match(new RegExp(`^svc_ctx=${v.replace('.', '\\.')}; Path=/proxy/3000; Max-Age=100; HttpOnly`));
    expect(authorizeProxy(fakeReq('/', { cookie: `svc_ctx=junk; svc_ctx=${v}` }), t, KEY, NOW).context.sub).to.equal('u');
    expect(statusOf(() => authorizeProxy(fakeReq('/', {}), t, KEY, NOW))).to.equal(401);
    // A bad header is not rescued by a good cookie.
    expect(statusOf(() => authorizeProxy(fakeReq('/', { 'x-svc-user-context': 'bad', cookie: `svc_ctx=${v}` }), t, KEY, NOW))).to.equal(401);
  });

  it('never forwards the daemon credentials or hop-by-hop headers', () => {
    const h = upstreamRequestHeaders(
      fakeReq('/', {
        'x-svc-user-context': 'v.s',
        cookie: 'svc_ctx=v.s; app=1',
        authorization: `Bearer ${KEY}`,
        connection: 'keep-alive, x-hop',
        'x-hop': '1',
        'x-keep': 'yes',
        host: 'sandbox.example.com',
      }),
      KEY,
      false,
    );
    expect(h).to.not.have.any.keys('x-svc-user-context', 'authorization', 'connection', 'x-hop');
    expect(h).to.include({ cookie: 'app=1', 'x-keep': 'yes', 'x-forwarded-for': '10.0.0.9', 'x-forwarded-host': 'sandbox.example.com' });
    // Someone else's Authorization (the preview app's own) passes.
    expect(upstreamRequestHeaders(fakeReq('/', { authorization: 'Bearer app-token' }), KEY, false).authorization).to.equal('Bearer app-token');
    expect(downstreamResponseHeaders({ 'transfer-encoding': 'chunked', 'content-type': 'x' })).to.deep.equal({ 'content-type': 'x' });
  });
});
