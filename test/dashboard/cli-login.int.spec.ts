import { expect } from 'chai';
import { createHash, randomBytes } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { startTestServer, type TestServer } from '../support/server.js';
import { PASSWORD, withPassword } from './support.js';

/**
 * `svc login` bound to the terminal: the CLI registers the login (its
 * callback, a PKCE challenge) and prints a user code; the approval page asks for the code;
 * the one-time code redeems only with the verifier. Attack 7 is replayed exactly.
 */
describe('svc login through the browser: bound to the terminal', function () {
  this.timeout(60_000);
  let srv: TestServer;
  let cookie: string;
  before(async () => {
    srv = await startTestServer();
    await withPassword(srv);
    cookie = await signIn();
  });
  after(() => srv.stop());

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

  const tokensNamed = async (name: string) =>
    (await srv.db.db.one<{ n: number }>({ text: 'SELECT count(*)::int AS n FROM tokens WHERE user_id = $1 AND name = $2', values: [srv.userId, name] }))!.n;

  /** What the CLI does first: a verifier it keeps, and the login registered with its challenge. */
  async function register(callback: string, hostname: string) {
    const verifier = randomBytes(32).toString('base64url');
    const challenge = createHash('sha256').update(verifier).digest('base64url');
    const r = await fetch(`${srv.url}/v1/cli/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ callback, hostname, code_challenge: challenge, code_challenge_method: 'S256' }),
    });
    expect(r.status).to.equal(201);
    const body = (await r.json()) as { state: string; user_code: string; expires_at: string };
    return { ...body, verifier };
  }

  /** The signed-in browser: shows a link, then answers it. */
  const show = (query: string, accept = 'text/html') => fetch(`${srv.url}/cli/login?${query}`, { headers: { cookie, accept } });
  async function decide(state: string, fields: Record<string, string>) {
    const shown = await show(`state=${state}`);
    const csrf = /name="_csrf" value="([^"]+)"/.exec(await shown.text())?.[1] ?? (/csrf-token" content="([^"]+)"/.exec(await (await fetch(`${srv.url}/projects`, { headers: { cookie } })).text())![1]!);
    return fetch(`${srv.url}/cli/login`, {
      method: 'POST',
      redirect: 'manual',
      headers: { cookie, origin: srv.url, 'content-type': 'application/x-www-form-urlencoded', accept: 'text/html' },
      body: new URLSearchParams({ _csrf: csrf, state, ...fields }),
    });
  }
  const redeem = (body: Record<string, string>) =>
    fetch(`${srv.url}/v1/cli/login/token`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });

  /** The attacker's loopback listener: every request it receives. */
  async function listener() {
    const got: string[] = [];
    const server = http.createServer((req, res) => {
      got.push(req.url ?? '');
      res.end('thanks');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    const port = (server.address() as AddressInfo).port;
    return { got, callback: `http://127.0.0.1:${port}/callback`, close: () => new Promise<void>((r) => server.close(() => r())) };
  }

  it('registration takes only a loopback callback and an S256 challenge; the user code is XXXX-XXXX', async () => {
    const post = (body: unknown) => fetch(`${srv.url}/v1/cli/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    const challenge = createHash('sha256').update('v'.repeat(43)).digest('base64url');
    for (const callback of ['http://evil.example:80/callback', 'http://127.0.0.1/callback', 'https://127.0.0.1:9/callback', 'http://127.0.0.1:9/other', 'http://127.0.0.1:9/callback?x=1']) {
      expect((await post({ callback, code_challenge: challenge, code_challenge_method: 'S256' })).status, callback).to.equal(400);
    }
    expect((await post({ callback: 'http://127.0.0.1:9/callback', code_challenge: challenge, code_challenge_method: 'plain' })).status).to.equal(400);
    expect((await post({ callback: 'http://127.0.0.1:9/callback' })).status).to.equal(400);
    const ok = await register('http://127.0.0.1:9/callback', '<b>laptop</b>');
    expect(ok.user_code).to.match(/^[B-Z]{4}-[B-Z]{4}$/).and.not.match(/[AEIOUY]/);
    expect(ok.state).to.match(/^[A-Za-z0-9_-]{32}$/);
    const page = await show(`state=${ok.state}`);
    expect(page.status).to.equal(200);
    const text = await page.text();
    expect(text).to.contain('Authorize svc on blaptopb?').and.contain('Code from your terminal');
    expect(text, 'the code is never on the page').to.not.contain(ok.user_code);
  });

  it('attack 7 replayed exactly: a crafted /cli/login?callback=<attacker>&state=… link approved by a signed-in user hands the attacker nothing', async () => {
    const attacker = await listener();
    try {
      // The link as the attack crafted it: a made-up state and the attacker's callback.
      const state = 'craftedstate00000000001';
      const link = `callback=${encodeURIComponent(attacker.callback)}&state=${state}&host=cloud&hostname=laptop`;
      const shown = await show(link);
      expect(shown.status).to.equal(410);
      const approved = await decide(state, { decision: 'approve' });
      expect(approved.status).to.equal(410);
      expect(approved.headers.get('location')).to.equal(null);

      // The attacker goes further: registers a login of its own (it knows the state, the user
      // code and the verifier) and sends the victim that link. Approving it without the
      // code the victim never saw, or with a guess, sends nothing anywhere.
      const own = await register(attacker.callback, 'laptop');
      expect((await show(`${link.replace(state, own.state)}`)).status).to.equal(200);
      const noCode = await decide(own.state, { decision: 'approve' });
      expect(noCode.status).to.equal(400);
      expect(noCode.headers.get('location')).to.equal(null);
      expect(await noCode.text()).to.contain('That is not the code svc login printed');
      for (let i = 0; i < 3; i++) expect((await decide(own.state, { decision: 'approve', user_code: 'BCDF-GHJK' })).status).to.equal(400);
      // The fifth wrong code kills the login, even for its real code.
      expect((await decide(own.state, { decision: 'approve', user_code: 'BCDF-GHJK' })).status).to.equal(410);
      const late = await decide(own.state, { decision: 'approve', user_code: own.user_code });
      expect(late.status).to.equal(410);
      expect(late.headers.get('location')).to.equal(null);
      expect(attacker.got, 'the attacker\'s callback was never called').to.deep.equal([]);
      expect(await tokensNamed('svc on laptop')).to.equal(0);
    } finally {
      await attacker.close();
    }
  });

  it('a code that reaches someone else is worthless: it redeems only with the verifier of the CLI that registered the login; the callback is the registered one, never the link\'s', async () => {
    const cli = await listener();
    const attacker = await listener();
    try {
      const login = await register(cli.callback, 'laptop-a');
      // A link carrying another callback still sends the code to the CLI's own.
      const r = await decide(login.state, { decision: 'approve', user_code: login.user_code.toLowerCase().replace('-', ' ') });
      expect(r.status).to.equal(303);
      const back = new URL(r.headers.get('location')!);
      expect(back.origin + back.pathname).to.equal(cli.callback);
      expect(back.searchParams.get('state')).to.equal(login.state);
      const code = back.searchParams.get('code')!;
      expect(code).to.match(/^[A-Za-z0-9_-]{43}$/);
      expect(await tokensNamed('svc on laptop-a'), 'no token before the CLI redeems').to.equal(0);

      // Whoever saw the code (a browser history, a listener that raced for the port) has no verifier.
      expect((await redeem({ state: login.state, code })).status).to.equal(400);
      const wrong = await redeem({ state: login.state, code, code_verifier: randomBytes(32).toString('base64url') });
      expect(wrong.status).to.equal(400);
      expect(await wrong.json()).to.deep.equal({ error: 'Invalid login code', message: 'This login code is unknown, used or expired. Run svc login again.' });
      // The CLI redeems once.
      const ok = await redeem({ state: login.state, code, code_verifier: login.verifier });
      expect(ok.status).to.equal(201);
      const { token } = (await ok.json()) as { token: string };
      expect((await fetch(`${srv.url}/v1/accounts/me`, { headers: { authorization: `Bearer ${token}` } })).status).to.equal(200);
      expect((await redeem({ state: login.state, code, code_verifier: login.verifier })).status).to.equal(400);
      expect(await tokensNamed('svc on laptop-a')).to.equal(1);
      expect(attacker.got).to.deep.equal([]);
    } finally {
      await cli.close();
      await attacker.close();
    }
  });

  it('a used, unknown or expired link answers 410 (a page to a browser, JSON otherwise); deny needs no code and sends access_denied', async () => {
    const used = await register('http://127.0.0.1:9/callback', 'laptop-u');
    expect((await decide(used.state, { decision: 'approve', user_code: used.user_code })).status).to.equal(303);
    for (const st of [used.state, 'unknownstate00000000001']) {
      const page = await show(`state=${st}`);
      expect(page.status, st).to.equal(410);
      expect(await page.text()).to.contain('<h1>Login link used or expired</h1>');
      const json = await show(`state=${st}`, 'application/json');
      expect(json.status).to.equal(410);
      expect(await json.json()).to.deep.equal({ error: 'Login link used or expired', message: 'This login link was used already or has expired. Run svc login again.' });
      expect((await decide(st, { decision: 'approve', user_code: used.user_code })).status).to.equal(410);
    }
    const expired = await register('http://127.0.0.1:9/callback', 'laptop-e');
    await srv.db.db.run({ text: `UPDATE cli_logins SET expires_at = now() - interval '1 second' WHERE state = $1`, values: [expired.state] });
    expect((await show(`state=${expired.state}`)).status).to.equal(410);

    const denied = await register('http://127.0.0.1:9/callback', 'laptop-d');
    const d = await decide(denied.state, { decision: 'deny' });
    expect(d.status).to.equal(303);
    const back = new URL(d.headers.get('location')!);
    expect(back.searchParams.get('error')).to.equal('access_denied');
    expect(back.searchParams.get('code')).to.equal(null);
    // Approving without the CSRF token: refused.
    const forged = await fetch(`${srv.url}/cli/login`, {
      method: 'POST',
      redirect: 'manual',
      headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ state: expired.state, decision: 'approve', user_code: expired.user_code }),
    });
    expect(forged.status).to.equal(403);
  });

  it('abandoned logins leave no token (never approved, or approved and never redeemed in time) and are swept a day after they expire', async () => {
    await register('http://127.0.0.1:9/callback', 'laptop-b');
    const late = await register('http://127.0.0.1:9/callback', 'laptop-b');
    const r = await decide(late.state, { decision: 'approve', user_code: late.user_code });
    const code = new URL(r.headers.get('location')!).searchParams.get('code')!;
    const row = await srv.db.db.one<{ expires_at: Date }>({ text: 'SELECT expires_at FROM cli_logins WHERE state = $1', values: [late.state] });
    expect(row!.expires_at.getTime(), 'the code is good for two minutes').to.be.at.most(Date.now() + 120_000);
    await srv.db.db.run({ text: `UPDATE cli_logins SET expires_at = now() - interval '1 second' WHERE state = $1`, values: [late.state] });
    expect((await redeem({ state: late.state, code, code_verifier: late.verifier })).status).to.equal(400);
    expect(await tokensNamed('svc on laptop-b')).to.equal(0);
    await srv.db.db.run({ text: `UPDATE cli_logins SET expires_at = now() - interval '25 hours' WHERE hostname = 'laptop-b'`, values: [] });
    const fresh = await register('http://127.0.0.1:9/callback', 'laptop-c');
    const left = await srv.db.db.rows<{ state: string }>({ text: `SELECT state FROM cli_logins WHERE hostname IN ('laptop-b', 'laptop-c')`, values: [] });
    expect(left.map((x) => x.state)).to.deep.equal([fresh.state]);
  });
});
