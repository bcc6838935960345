import http from 'node:http';
import { expect } from 'chai';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { projectRoot } from '../../lib/paths.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { requestFrom } from '../support/http.js';
import { PASSWORD, withPassword } from './support.js';

/** Sign-in over plain HTTP: the form's rules, the rate limit, and the cookie's reach. */
describe('dashboard sign-in (HTTP)', function () {
  this.timeout(60_000);
  let srv: TestServer;
  before(async () => {
    srv = await startTestServer();
    await withPassword(srv);
  });
  after(() => srv.stop());

  /** A browser-like sign-in form session: the pre-sign-in cookie and the form's token. */
  async function form() {
    const r = await fetch(`${srv.url}/login`);
    const pre = /svc_pre=([^;]+)/.exec(r.headers.get('set-cookie') ?? '')![1]!;
    const csrf = /name="_csrf" value="([^"]+)"/.exec(await r.text())![1]!;
    const post = (fields: Record<string, string>, headers: Record<string, string> = {}) =>
      fetch(`${srv.url}/login`, {
        method: 'POST',
        redirect: 'manual',
        headers: { cookie: `__Host-svc_pre=${pre}`, 'content-type': 'application/x-www-form-urlencoded', origin: srv.url, ...headers },
        body: new URLSearchParams({ _csrf: csrf, ...fields }),
      });
    return { post };
  }
  const sessionCookie = (r: Response) => /svc_session=([^;]+)/.exec(r.headers.get('set-cookie') ?? '')?.[1];

  it('signs in with a password; the cookie is HttpOnly, SameSite=Lax; an off-site next is ignored', async () => {
    const r = await (await form()).post({ email: 'OWNER@example.test', password: PASSWORD, next: '//evil.example/x' });
    expect(r.status).to.equal(303);
    expect(r.headers.get('location')).to.equal('/projects');
    expect(r.headers.get('set-cookie')).to.match(/__Host-svc_session=[^;]+; Path=\/; HttpOnly; SameSite=Lax; Max-Age=\d+; Secure/);
    const page = await fetch(`${srv.url}/projects`, { headers: { cookie: `__Host-svc_session=${sessionCookie(r)}` } });
    expect(page.status).to.equal(200);
    expect(page.headers.get('referrer-policy')).to.equal('no-referrer');
    expect(await page.text()).to.contain('owner@example.test');
  });

  it('the cookies are __Host- (Secure, host-only): a bare-named cookie a sibling origin tossed counts for nothing', async () => {
    const r = await (await form()).post({ email: 'owner@example.test', password: PASSWORD });
    const value = sessionCookie(r)!;
    for (const cookie of [`svc_session=${value}`, `__Secure-svc_session=${value}`]) {
      const page = await fetch(`${srv.url}/projects`, { headers: { cookie }, redirect: 'manual' });
      expect([page.status, page.headers.get('location')], cookie).to.deep.equal([303, '/login?next=%2Fprojects']);
    }
    const login = await fetch(`${srv.url}/login`);
    expect(login.headers.get('set-cookie')).to.match(/^__Host-svc_pre=[^;]+; Path=\/; HttpOnly; SameSite=Lax; Max-Age=3600; Secure$/);
    // Plain http on a host that is not loopback: browsers drop Secure cookies there, so the bare name (and no Secure).
    const lan = await new Promise<string>((resolve, reject) => {
      const u = new URL(`${srv.url}/login`);
      http.get({ host: u.hostname, port: u.port, path: '/login', headers: { host: 'svc.lan:8080' } }, (res) => (res.resume(), resolve(String(res.headers['set-cookie'])))).on('error', reject);
    });
    expect(lan).to.match(/^svc_pre=[^;]+; Path=\/; HttpOnly; SameSite=Lax; Max-Age=3600$/);
  });

  it('the API never takes the cookie: Bearer only', async () => {
    const r = await (await form()).post({ email: 'owner@example.test', password: PASSWORD });
    const api = await fetch(`${srv.url}/v1/projects`, { headers: { cookie: `__Host-svc_session=${sessionCookie(r)}` } });
    expect(api.status).to.equal(401);
  });

  it('signs in with a pasted user token, not with a project token or garbage', async () => {
    const f = await form();
    const ok = await f.post({ token: srv.token });
    expect(ok.status).to.equal(303);
    expect(sessionCookie(ok)).to.be.a('string');
    const bad = await f.post({ token: 'svc_pat_nope' });
    expect(bad.status).to.equal(401);
    expect(await bad.text()).to.contain('That is not a valid user token.');
  });

  it('refuses a sign-in form without its token or from another origin', async () => {
    const noToken = await fetch(`${srv.url}/login`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: 'email=owner@example.test&password=x' });
    expect(noToken.status).to.equal(403);
    const cross = await (await form()).post({ email: 'owner@example.test', password: PASSWORD }, { origin: 'http://evil.example' });
    expect(cross.status).to.equal(403);
  });

  /** The sign-in form from a chosen client address (127.0.0.x). */
  async function formFrom(addr: string) {
    const r = await requestFrom(addr, `${srv.url}/login`);
    const pre = /svc_pre=([^;]+)/.exec(String(r.headers['set-cookie']))![1]!;
    const csrf = /name="_csrf" value="([^"]+)"/.exec(r.text)![1]!;
    return (fields: Record<string, string>) =>
      requestFrom(addr, `${srv.url}/login`, {
        method: 'POST',
        headers: { cookie: `__Host-svc_pre=${pre}`, 'content-type': 'application/x-www-form-urlencoded', origin: srv.url },
        body: new URLSearchParams({ _csrf: csrf, ...fields }).toString(),
      });
  }

  it('backs off per (email, client): the guesser waits (429, Retry-After, doubling); the owner signs in from elsewhere at once; nothing locks the account', async () => {
    await srv.newUser('limited@example.test');
    await withPassword(srv, 'limited@example.test');
    const attacker = await formFrom('127.0.0.2');
    for (let i = 0; i < 5; i++) expect((await attacker({ email: 'limited@example.test', password: 'wrong-password' })).status).to.equal(401);
    // Sixth try from the same client: backed off, the right password included.
    const held = await attacker({ email: 'limited@example.test', password: PASSWORD });
    expect(held.status).to.equal(429);
    expect(Number(held.headers['retry-after'])).to.be.within(1, 15);
    expect(held.text).to.contain('Too many failed sign-ins');
    // The owner, from another client, is not locked out (today's lock took 5 wrong passwords from anyone).
    const owner = await formFrom('127.0.0.3');
    expect((await owner({ email: 'limited@example.test', password: PASSWORD })).status).to.equal(303);
    // The guesser's other emails are not held back by this pair either.
    expect((await attacker({ email: 'owner@example.test', password: PASSWORD })).status).to.equal(303);
    // Once the wait has passed the guesser gets one more try; failing it doubles the wait.
    const age = (s: number) =>
      srv.db.db.run({ text: `UPDATE sign_in_failures SET failed_at = failed_at - make_interval(secs => $1) WHERE client = 'addr:127.0.0.2'`, values: [s] });
    await age(16);
    expect((await attacker({ email: 'limited@example.test', password: 'wrong-again' })).status).to.equal(401);
    const longer = await attacker({ email: 'limited@example.test', password: PASSWORD });
    expect(longer.status).to.equal(429);
    expect(Number(longer.headers['retry-after'])).to.be.within(16, 30);
    await age(31);
    expect((await attacker({ email: 'limited@example.test', password: PASSWORD })).status).to.equal(303);
  });

  it('svc-server admin set-password / bootstrap --password-stdin hash with scrypt and never print the password', async () => {
    const run = (args: string[], input: string) =>
      new Promise<{ code: number; out: string }>((resolve) => {
        const child = spawn(process.execPath, [path.join(projectRoot, 'dist/ops/svc-server.js'), ...args], {
          env: { ...process.env, DATABASE_URL: srv.db.url, LOG_LEVEL: 'silent', SVC_DATA_DIR: srv.dataDir },
          stdio: ['pipe', 'pipe', 'pipe'],
        });
        let out = '';
        child.stdout.on('data', (c: Buffer) => (out += c));
        child.stderr.on('data', (c: Buffer) => (out += c));
        child.on('close', (code) => resolve({ code: code ?? -1, out }));
        child.stdin.end(input);
      });
    const boot = await run(['admin', 'bootstrap', '--email', 'new@example.test', '--password-stdin'], 'a new password 1\n');
    expect(boot.code, boot.out).to.equal(0);
    expect(boot.out).to.match(/^svc_pat_/).and.not.contain('a new password 1');
    // Two browsers signed in with the first password ...
    const before = await Promise.all([1, 2].map(async () => `__Host-svc_session=${sessionCookie(await (await form()).post({ email: 'new@example.test', password: 'a new password 1' }))}`));
    for (const c of before) expect((await fetch(`${srv.url}/projects`, { headers: { cookie: c }, redirect: 'manual' })).status).to.equal(200);
    const set = await run(['admin', 'set-password', '--email', 'new@example.test'], 'another password 2\n');
    expect(set.code, set.out).to.equal(0);
    // ... are signed out by the new one: an old cookie gets the sign-in page.
    for (const c of before) {
      const r = await fetch(`${srv.url}/projects`, { headers: { cookie: c }, redirect: 'manual' });
      expect(r.status).to.equal(303);
      expect(r.headers.get('location')).to.match(/^\/login/);
    }
    const row = await srv.db.db.one<{ password_hash: string }>({ text: "SELECT password_hash FROM users WHERE email = 'new@example.test'", values: [] });
    expect(row!.password_hash).to.match(/^scrypt\$16384\$8\$1\$[A-Za-z0-9_-]+\$[A-Za-z0-9_-]+$/);
    expect((await (await form()).post({ email: 'new@example.test', password: 'another password 2' })).status).to.equal(303);
    expect((await run(['admin', 'set-password', '--email', 'nobody@example.test'], 'whatever123\n')).code).to.equal(1);
    expect((await run(['admin', 'set-password', '--email', 'new@example.test'], 'short\n')).code).to.equal(1);
  });

  it('"Sign out everywhere" ends every browser of the user (and the API tokens they called with), not other users\'', async () => {
    const other = await srv.newUser('other-browser@example.test');
    await withPassword(srv, 'other-browser@example.test');
    const mine = await Promise.all([1, 2].map(async () => `__Host-svc_session=${sessionCookie(await (await form()).post({ email: 'owner@example.test', password: PASSWORD }))}`));
    const theirs = `__Host-svc_session=${sessionCookie(await (await form()).post({ email: 'other-browser@example.test', password: PASSWORD }))}`;
    void other;
    const page = await fetch(`${srv.url}/projects`, { headers: { cookie: mine[0]! } });
    const csrf = /name="_csrf" value="([^"]+)"/.exec(await page.text())![1]!;
    const tokens = async () =>
      (await srv.db.db.one<{ n: number }>({ text: `SELECT count(*)::int AS n FROM tokens WHERE user_id = $1 AND name = 'dashboard sign-in' AND revoked_at IS NULL`, values: [srv.userId] }))!.n;
    expect(await tokens()).to.be.at.least(2);
    // A cross-site form cannot do it.
    const forged = await fetch(`${srv.url}/logout/everywhere`, { method: 'POST', redirect: 'manual', headers: { cookie: mine[0]!, 'content-type': 'application/x-www-form-urlencoded', origin: 'http://evil.example' }, body: new URLSearchParams({ _csrf: csrf }) });
    expect(forged.status).to.equal(403);
    const r = await fetch(`${srv.url}/logout/everywhere`, { method: 'POST', redirect: 'manual', headers: { cookie: mine[0]!, 'content-type': 'application/x-www-form-urlencoded', origin: srv.url }, body: new URLSearchParams({ _csrf: csrf }) });
    expect(r.status).to.equal(303);
    expect(r.headers.get('location')).to.equal('/login');
    for (const c of mine) {
      const after = await fetch(`${srv.url}/projects`, { headers: { cookie: c }, redirect: 'manual' });
      expect(after.status).to.equal(303);
      expect(after.headers.get('location')).to.match(/^\/login/);
    }
    expect(await tokens()).to.equal(0);
    expect((await fetch(`${srv.url}/projects`, { headers: { cookie: theirs }, redirect: 'manual' })).status).to.equal(200);
  });

  it('dashboard 404s are pages to a browser (escaped, with the CSP) for unknown paths and unknown projects, CRs and sessions; /v1 404s stay JSON', async () => {
    const cookie = `__Host-svc_session=${sessionCookie(await (await form()).post({ email: 'owner@example.test', password: PASSWORD }))}`;
    const project = (await (await fetch(`${srv.url}/v1/projects`, { method: 'POST', headers: { authorization: `Bearer ${srv.token}`, 'content-type': 'application/json' }, body: JSON.stringify({ name: 'Pages', slug: 'pages' }) })).json()) as { project: { slug: string } };
    const nobody = '00000000-0000-4000-8000-000000000000';
    for (const p of ['/no/such/page', '/projects/%3Cb%3Eno-such%3C%2Fb%3E', `/projects/${nobody}`, `/projects/${project.project.slug}/change-requests/999`, `/projects/${project.project.slug}/sessions/${nobody}`]) {
      for (const accept of ['text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8', 'text/html']) {
        const r = await fetch(`${srv.url}${p}`, { headers: { cookie, accept } });
        expect(r.status, p).to.equal(404);
        expect(r.headers.get('content-type'), p).to.match(/^text\/html/);
        expect(r.headers.get('content-security-policy'), p).to.contain("default-src 'self'");
        const text = await r.text();
        expect(text, p).to.match(/^<!doctype html>/).and.contain('<h1>Not found</h1>').and.contain('href="/projects"');
        expect(text, p).to.not.contain('<b>no-such');
      }
    }
    // The page's script and non-browsers get the API's error body, as for every dashboard error.
    for (const headers of [{ cookie, accept: 'application/json' }, { cookie }] as Record<string, string>[]) {
      const r = await fetch(`${srv.url}/no/such/page`, { headers });
      expect(r.status).to.equal(404);
      expect(await r.json()).to.deep.equal({ error: 'Not found', message: 'There is no page at this address.' });
    }
    const api = await fetch(`${srv.url}/v1/no/such`, { headers: { authorization: `Bearer ${srv.token}`, accept: 'text/html' } });
    expect(api.status).to.equal(404);
    expect(api.headers.get('content-type')).to.match(/^application\/json/);
    expect(await api.json()).to.include({ error: 'Not found' });
  });
});
