import { expect } from 'chai';
import { readFile } from 'node:fs/promises';
import { startTestServer, type TestServer } from '../support/server.js';
import { client } from '../support/http.js';
import { fixtureRepo } from '../support/repo.js';
import { makeFactory, runSvc, sandbox, type Sandbox } from '../cli/helpers.js';
import { main } from '../../cli/app.js';

/** GET/POST /v1/accounts/tokens, DELETE /v1/accounts/tokens/:tokenId, and `svc auth token`. */
describe('tokens API', function () {
  this.timeout(60_000);
  let srv: TestServer;
  let api: ReturnType<typeof client>;
  before(async () => {
    srv = await startTestServer();
    api = client(srv.url, srv.token);
  });
  after(() => srv.stop());

  it('mints with expires_in_days, lists live tokens without values, revokes; a revoked token is 401', async () => {
    const made = await api.post('/v1/accounts/tokens', { name: 'ci', expires_in_days: 7 });
    expect(made.status).to.equal(201);
    const days = (new Date(made.body.expires_at).getTime() - Date.now()) / 86_400_000;
    expect(days).to.be.within(6.99, 7.01);
    const list = await api.get('/v1/accounts/tokens');
    expect(list.status).to.equal(200);
    const row = list.body.tokens.find((t: { token_id: string }) => t.token_id === made.body.token_id);
    expect(row).to.include({ name: 'ci', project_id: null, last_used_at: null });
    expect(Object.keys(row).sort()).to.deep.equal(['created_at', 'expires_at', 'last_used_at', 'name', 'project_id', 'token_id']);
    expect(JSON.stringify(list.body)).to.not.contain('svc_pat_');

    const mine = client(srv.url, made.body.token);
    expect((await mine.get('/v1/accounts/me')).status).to.equal(200);
    expect((await api.call('DELETE', `/v1/accounts/tokens/${made.body.token_id}`)).status).to.equal(204);
    expect((await mine.get('/v1/accounts/me')).status).to.equal(401);
    expect((await api.call('DELETE', `/v1/accounts/tokens/${made.body.token_id}`)).status).to.equal(404);
    const after = await api.get('/v1/accounts/tokens');
    expect(after.body.tokens.map((t: { token_id: string }) => t.token_id)).to.not.include(made.body.token_id);
  });

  it('records last_used_at, at most once a minute', async () => {
    const made = await api.post('/v1/accounts/tokens', { name: 'used' });
    const mine = client(srv.url, made.body.token);
    await mine.get('/v1/accounts/me');
    const stamp = async () => (await srv.db.db.one<{ last_used_at: Date | null }>({ text: 'SELECT last_used_at FROM tokens WHERE token_id = $1', values: [made.body.token_id] }))!.last_used_at;
    let first: Date | null = null;
    for (let i = 0; i < 100 && !first; i++) {
      first = await stamp(); // written off the request's path
      if (!first) await new Promise((r) => setTimeout(r, 20));
    }
    expect(first).to.be.instanceOf(Date);
    await mine.get('/v1/accounts/me');
    await mine.get('/v1/accounts/me');
    await new Promise((r) => setTimeout(r, 100));
    expect((await stamp())!.getTime()).to.equal(first!.getTime());
    // Older than a minute: the next use writes again.
    await srv.db.db.run({ text: "UPDATE tokens SET last_used_at = now() - interval '2 minutes' WHERE token_id = $1", values: [made.body.token_id] });
    const old = (await stamp())!.getTime();
    await mine.get('/v1/accounts/me');
    let now = old;
    for (let i = 0; i < 100 && now === old; i++) {
      now = (await stamp())!.getTime();
      if (now === old) await new Promise((r) => setTimeout(r, 20));
    }
    expect(now).to.be.greaterThan(old);
  });

  it("answers 4xx, never 500: bad bodies, another user's token, bad ids, project tokens", async () => {
    for (const body of [{ expires_in_days: 0 }, { expires_in_days: 1.5 }, { expires_in_days: '3' }, { expires_in_days: 4000 }, { nope: 1 }]) {
      const r = await api.post('/v1/accounts/tokens', body);
      expect(r.status, JSON.stringify(body)).to.equal(400);
      expect(r.body.error).to.equal('Validation failed');
    }
    const other = await srv.newUser('other@example.test');
    const theirs = await client(srv.url, other.token).post('/v1/accounts/tokens', { name: 'theirs' });
    expect((await api.call('DELETE', `/v1/accounts/tokens/${theirs.body.token_id}`)).status).to.equal(404);
    expect((await client(srv.url, theirs.body.token).get('/v1/accounts/me')).status).to.equal(200);
    for (const bad of ['not-a-uuid', '%00', 'x'.repeat(300)]) {
      expect((await api.call('DELETE', `/v1/accounts/tokens/${bad}`)).status).to.equal(404);
    }
    const repo = await fixtureRepo();
    const p = await api.post('/v1/projects', { name: 'tok', slug: 'tok', repo_url: repo.url });
    await repo.cleanup();
    const pt = await api.post(`/v1/projects/${p.body.project.project_id}/cli-token`);
    expect(pt.status).to.equal(201);
    expect((await client(srv.url, pt.body.token).get('/v1/accounts/tokens')).status).to.equal(403);
    const listed = (await api.get('/v1/accounts/tokens')).body.tokens.find((t: { token_id: string }) => t.token_id === pt.body.token_id);
    expect(listed.project_id).to.equal(p.body.project.project_id);
  });

  describe('svc auth token', () => {
    let sb: Sandbox;
    beforeEach(async () => (sb = await sandbox()));
    afterEach(() => sb.cleanup());
    const svc = (args: string[]) => runSvc(args, { configPath: sb.configPath, cwd: sb.dir, env: { SVC_API_URL: `${srv.url}/v1`, SVC_CLI_TOKEN: srv.token } });

    it('create prints only the token on stdout; ls lists it; revoke ends it', async () => {
      const made = await svc(['auth', 'token', 'create', '--name', 'laptop', '--expires-in-days', '30']);
      expect(made.code, made.stderr).to.equal(0);
      expect(made.stdout).to.match(/^svc_pat_[A-Za-z0-9_-]+\n$/);
      expect(made.stderr).to.contain('shown only once');
      const token = made.stdout.trim();
      const id = /Created token ([0-9a-f-]{36})/.exec(made.stderr)![1]!;
      const ls = await svc(['auth', 'token', 'ls']);
      expect(ls.stdout.split('\n').find((l) => l.startsWith(id))).to.match(new RegExp(`^${id}\\tlaptop\\tuser\\t`));
      const json = JSON.parse((await svc(['auth', 'token', 'ls', '--json'])).stdout) as Array<{ token_id: string }>;
      expect(json.map((t) => t.token_id)).to.include(id);
      const rv = await svc(['auth', 'token', 'revoke', id]);
      expect(rv.code, rv.stderr).to.equal(0);
      expect((await client(srv.url, token).get('/v1/accounts/me')).status).to.equal(401);
      const again = await svc(['auth', 'token', 'revoke', id]);
      expect(again.code).to.equal(1);
      expect((await svc(['auth', 'token', 'revoke'])).code).to.equal(2);
      expect((await svc(['auth', 'token', 'create', '--expires-in-days', '0'])).code).to.equal(2);
      expect((await svc(['auth', 'token', 'nope'])).code).to.equal(2);
    });

    it('svc login over a stored token revokes the token it replaces (its id from /accounts/me); the new one works', async () => {
      const old = (await api.post('/v1/accounts/tokens', { name: 'old laptop' })).body as { token: string; token_id: string };
      const fresh = (await api.post('/v1/accounts/tokens', { name: 'new laptop' })).body as { token: string; token_id: string };
      expect((await client(srv.url, old.token).get('/v1/accounts/me')).body.token_id).to.equal(old.token_id);
      const login = (token: string) => runSvc(['login', '--api', srv.url, '--token', token], { configPath: sb.configPath, cwd: sb.dir, env: {} });
      expect((await login(old.token)).code).to.equal(0);
      const r = await login(fresh.token);
      expect(r.code, r.stderr).to.equal(0);
      expect(r.stderr).to.not.contain('warning');
      expect((await client(srv.url, old.token).get('/v1/accounts/me')).status).to.equal(401);
      expect((await client(srv.url, fresh.token).get('/v1/accounts/me')).status).to.equal(200);
    });

    it('svc login in the browser with a code the server does not know: the callback page says it failed, exit 1, nothing stored', async () => {
      const { f, t } = makeFactory({ configPath: sb.configPath, cwd: sb.dir, env: { SVC_DASHBOARD_URL: 'https://dash.test' } });
      const done = main(['login', '--api', srv.url], f);
      let m: RegExpExecArray | null = null;
      for (let i = 0; i < 500 && !m; i++) {
        m = /\/cli\/login\?(\S+)/.exec(t.stderr());
        if (!m) await new Promise((r) => setTimeout(r, 10));
      }
      const q = new URLSearchParams(m![1]);
      // The link carries the login id only; the callback is the one the CLI registered.
      const row = await srv.db.db.one<{ callback: string }>({ text: 'SELECT callback FROM cli_logins WHERE state = $1', values: [q.get('state')] });
      const page = await fetch(`${row!.callback}?state=${q.get('state')}&code=bogus`);
      expect(page.status).to.equal(500);
      expect(await page.text()).to.contain('Login failed').and.contain('svc login').and.not.contain('Logged in');
      expect(await done).to.equal(1);
      expect(t.stderr().split('\n').filter((l) => l.startsWith('error:'))).to.have.length(1);
      expect(t.stderr()).to.match(/^error: the login failed: .* \(HTTP 400\); run 'svc login' again$/m);
      expect(await readFile(sb.configPath, 'utf8').catch(() => '')).to.not.contain('svc_pat_');
    });
  });
});
