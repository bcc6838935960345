import { expect } from 'chai';
import { startTestServer, type TestServer } from '../../support/server.js';
import { client, requestFrom } from '../../support/http.js';
import { PASSWORD, withPassword } from '../../dashboard/support.js';

/**
 * Failed-auth buckets are per principal. One client's guesses
 * (bad bearer tokens, bad git passwords, bad sandbox keys) fill its own bucket only: the
 * dashboard and every other client keep working. Loopback source addresses stand for
 * clients (127.0.0.2 the attacker, 127.0.0.3 another client); 127.0.0.4 is a trusted proxy.
 */
describe('failed-auth limits per principal', function () {
  this.timeout(60_000);
  const LIMIT = 20;
  let srv: TestServer;
  let cookie: string;
  before(async () => {
    srv = await startTestServer({ env: { SVC_AUTH_FAILURE_LIMIT: String(LIMIT), SVC_AUTH_FAILURE_WINDOW_S: '60', SVC_TRUST_PROXY: '127.0.0.4' } });
    // A managed repository, served at /git/managed.git.
    expect((await client(srv.url, srv.token).post('/v1/projects', { name: 'managed', slug: 'managed' })).status).to.equal(201);
    await withPassword(srv);
    cookie = await signIn();
  });
  after(() => srv?.stop());

  async function signIn(): Promise<string> {
    const r = await fetch(`${srv.url}/login`);
    const pre = /svc_pre=([^;]+)/.exec(r.headers.get('set-cookie') ?? '')![1]!;
    const csrf = /name="_csrf" value="([^"]+)"/.exec(await r.text())![1]!;
    const s = await fetch(`${srv.url}/login`, {
      method: 'POST',
      redirect: 'manual',
      headers: { cookie: `__Host-svc_pre=${pre}`, 'content-type': 'application/x-www-form-urlencoded', origin: srv.url },
      body: new URLSearchParams({ _csrf: csrf, email: 'owner@example.test', password: PASSWORD }),
    });
    return `__Host-svc_session=${/svc_session=([^;]+)/.exec(s.headers.get('set-cookie') ?? '')![1]!}`;
  }

  const basic = (token: string) => `Basic ${Buffer.from(`x-access-token:${token}`).toString('base64')}`;
  const bad = (i: number) => `svc_pat_${'b'.repeat(30)}${i}`;
  /** The three surfaces a guess can go to, in turn. */
  const guess = (from: string, i: number, headers: Record<string, string> = {}) => {
    const surface = i % 3;
    if (surface === 0) return requestFrom(from, `${srv.url}/v1/projects`, { headers: { authorization: `Bearer ${bad(i)}`, ...headers } });
    if (surface === 1) return requestFrom(from, `${srv.url}/git/managed.git/info/refs?service=git-upload-pack`, { headers: { authorization: basic(bad(i)), ...headers } });
    return requestFrom(from, `${srv.url}/v1/projects/managed/git/clone-credential`, { headers: { authorization: `Bearer ${bad(i)}`, ...headers } });
  };

  it('100 bad tokens from one client (API, /git, clone-credential): 20 answered 401, 80 answered 429; the dashboard and another client are unaffected', async () => {
    const statuses: number[] = [];
    for (let i = 0; i < 100; i++) {
      const r = await guess('127.0.0.2', i);
      statuses.push(r.status);
      if (r.status === 429) expect(Number(r.headers['retry-after'])).to.be.within(1, 60);
    }
    expect(statuses.slice(0, LIMIT).every((s) => s === 401), statuses.join(',')).to.equal(true);
    expect(statuses.slice(LIMIT).every((s) => s === 429), statuses.join(',')).to.equal(true);
    // Every surface held the attacker back, git included.
    expect(statuses.filter((s, i) => s === 429 && i % 3 === 1).length).to.be.greaterThan(20);
    expect(statuses.filter((s, i) => s === 429 && i % 3 === 2).length).to.be.greaterThan(20);
    // The attacker's own good token waits too: the bucket is the client's, not the token's.
    expect((await requestFrom('127.0.0.2', `${srv.url}/v1/projects`, { headers: { authorization: `Bearer ${srv.token}` } })).status).to.equal(429);

    // Another client: its tokens work everywhere, and its own mistakes are plain 401s.
    const other = '127.0.0.3';
    expect((await requestFrom(other, `${srv.url}/v1/projects`, { headers: { authorization: `Bearer ${srv.token}` } })).status).to.equal(200);
    expect((await requestFrom(other, `${srv.url}/git/managed.git/info/refs?service=git-upload-pack`, { headers: { authorization: basic(srv.token) } })).status).to.equal(200);
    expect((await guess(other, 0)).status).to.equal(401);
    expect((await guess(other, 1)).status).to.equal(401);
    expect((await guess(other, 2)).status).to.equal(401);

    // The dashboard, even from the attacker's own address: pages, and the session proxy
    // its signed cookie vouches for (an unknown session: 404, past authentication). The
    // cookie counts on the proxy only from the dashboard's own pages (same-origin, as a
    // browser says with Sec-Fetch-Site), so the request says what a dashboard page sends.
    expect((await requestFrom('127.0.0.2', `${srv.url}/projects`, { headers: { cookie } })).status).to.equal(200);
    const proxied = await requestFrom('127.0.0.2', `${srv.url}/v1/projects/managed/sessions/00000000-0000-4000-8000-000000000000/agent/`, { headers: { cookie, 'sec-fetch-site': 'same-origin' } });
    expect(proxied.status, proxied.text).to.equal(404);
    expect((await requestFrom('127.0.0.1', `${srv.url}/projects`, { headers: { cookie } })).status).to.equal(200);
  });

  it('X-Forwarded-For names the client only from a trusted proxy: a client behind it is limited alone, and an untrusted peer cannot make up addresses', async () => {
    const proxy = '127.0.0.4';
    // Behind the trusted proxy: 203.0.113.7 fills its own bucket ...
    for (let i = 0; i < LIMIT; i++) expect((await guess(proxy, i, { 'x-forwarded-for': '203.0.113.7' })).status).to.equal(401);
    expect((await guess(proxy, LIMIT, { 'x-forwarded-for': '203.0.113.7' })).status).to.equal(429);
    // ... a spoofed left-hand hop does not get it out (the proxy appends the real client on the right) ...
    expect((await guess(proxy, 0, { 'x-forwarded-for': '198.51.100.1, 203.0.113.7' })).status).to.equal(429);
    // ... and the proxy's other clients are unaffected.
    expect((await requestFrom(proxy, `${srv.url}/v1/projects`, { headers: { authorization: `Bearer ${srv.token}`, 'x-forwarded-for': '203.0.113.8' } })).status).to.equal(200);
    expect((await guess(proxy, 0, { 'x-forwarded-for': '203.0.113.8' })).status).to.equal(401);

    // An untrusted peer's header is ignored: every made-up address shares the peer's one bucket.
    const liar = '127.0.0.5';
    const codes: number[] = [];
    for (let i = 0; i < LIMIT + 5; i++) codes.push((await guess(liar, i, { 'x-forwarded-for': `198.51.100.${i + 1}` })).status);
    expect(codes.filter((c) => c === 401).length).to.equal(LIMIT);
    expect(codes.slice(LIMIT).every((c) => c === 429)).to.equal(true);
  });

  it('SVC_TRUST_PROXY must be addresses or CIDRs: the server refuses to start otherwise', async () => {
    const { loadConfig, ConfigError } = await import('../../../infra/config.js');
    expect(() => loadConfig({ SVC_TRUST_PROXY: '10.0.0.0/8, fd00::/8, 127.0.0.1' })).not.to.throw();
    for (const v of ['10.0.0.0/33', 'example.com', '10.0.0.0/8/1', '::1/129']) {
      expect(() => loadConfig({ SVC_TRUST_PROXY: v }), v).to.throw(ConfigError, /SVC_TRUST_PROXY/);
    }
  });
});
