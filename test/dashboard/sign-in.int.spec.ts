import { expect } from 'chai';
import { spawn } from 'node:child_process';
import path from 'node:path';
import { projectRoot } from '../../infra/paths.js';
import { startTestServer, type TestServer } from '../support/server.js';
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
        headers: { cookie: `svc_pre=${pre}`, 'content-type': 'application/x-www-form-urlencoded', origin: srv.url, ...headers },
        body: new URLSearchParams({ _csrf: csrf, ...fields }),
      });
    return { post };
  }
  const sessionCookie = (r: Response) => /svc_session=([^;]+)/.exec(r.headers.get('set-cookie') ?? '')?.[1];

  it('signs in with a password; the cookie is HttpOnly, SameSite=Lax; an off-site next is ignored', async () => {
    const r = await (await form()).post({ email: 'OWNER@example.test', password: PASSWORD, next: '//evil.example/x' });
    expect(r.status).to.equal(303);
    expect(r.headers.get('location')).to.equal('/projects');
    expect(r.headers.get('set-cookie')).to.match(/svc_session=[^;]+; Path=\/; HttpOnly; SameSite=Lax/);
    const page = await fetch(`${srv.url}/projects`, { headers: { cookie: `svc_session=${sessionCookie(r)}` } });
    expect(page.status).to.equal(200);
    expect(await page.text()).to.contain('owner@example.test');
  });

  it('the API never takes the cookie: Bearer only', async () => {
    const r = await (await form()).post({ email: 'owner@example.test', password: PASSWORD });
    const api = await fetch(`${srv.url}/v1/projects`, { headers: { cookie: `svc_session=${sessionCookie(r)}` } });
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

  it('rate-limits failed sign-ins per email (429 with Retry-After), the right password included', async () => {
    const user = await srv.newUser('limited@example.test');
    void user;
    await withPassword(srv, 'limited@example.test');
    const f = await form();
    for (let i = 0; i < 5; i++) expect((await f.post({ email: 'limited@example.test', password: 'wrong-password' })).status).to.equal(401);
    const limited = await f.post({ email: 'limited@example.test', password: PASSWORD });
    expect(limited.status).to.equal(429);
    expect(Number(limited.headers.get('retry-after'))).to.be.greaterThan(0);
    expect(await limited.text()).to.contain('Too many failed sign-ins');
    // Another account is not locked out by it.
    expect((await f.post({ email: 'owner@example.test', password: PASSWORD })).status).to.equal(303);
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
    const set = await run(['admin', 'set-password', '--email', 'new@example.test'], 'another password 2\n');
    expect(set.code, set.out).to.equal(0);
    const row = await srv.db.db.one<{ password_hash: string }>({ text: "SELECT password_hash FROM users WHERE email = 'new@example.test'", values: [] });
    expect(row!.password_hash).to.match(/^scrypt\$16384\$8\$1\$[A-Za-z0-9_-]+\$[A-Za-z0-9_-]+$/);
    expect((await (await form()).post({ email: 'new@example.test', password: 'another password 2' })).status).to.equal(303);
    expect((await run(['admin', 'set-password', '--email', 'nobody@example.test'], 'whatever123\n')).code).to.equal(1);
    expect((await run(['admin', 'set-password', '--email', 'new@example.test'], 'short\n')).code).to.equal(1);
  });

  it('the CLI login page refuses a callback that is not loopback, and answers 4xx to junk', async () => {
    const r = await (await form()).post({ email: 'owner@example.test', password: PASSWORD });
    const cookie = `svc_session=${sessionCookie(r)}`;
    const get = (q: string) => fetch(`${srv.url}/cli/login?${q}`, { headers: { cookie } });
    expect((await get('callback=http://evil.example:80/callback&state=abcdefghijklmnop1234')).status).to.equal(400);
    expect((await get('callback=http://127.0.0.1:9/callback&state=short')).status).to.equal(400);
    expect((await get('')).status).to.equal(400);
    const ok = await get('callback=http://127.0.0.1:9/callback&state=abcdefghijklmnop1234&hostname=<b>x</b>');
    expect(ok.status).to.equal(200);
    expect(await ok.text()).to.contain('Authorize svc on bxb?');
    // Approve without the CSRF token: refused.
    const forged = await fetch(`${srv.url}/cli/login`, { method: 'POST', headers: { cookie, 'content-type': 'application/x-www-form-urlencoded' }, body: 'state=abcdefghijklmnop1234&decision=approve', redirect: 'manual' });
    expect(forged.status).to.equal(403);
  });
});
