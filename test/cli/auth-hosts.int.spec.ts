import { expect } from 'chai';
import nock from 'nock';
import { useNock } from './nock-scope.js';
import http from 'node:http';
import { createHash } from 'node:crypto';
import { readFile, stat } from 'node:fs/promises';
import { main } from '../../cli/app.js';
import { readConfig, writeConfig } from '../../cli/config.js';
import { ME, makeFactory, runSvc, sandbox, scriptedPrompter, type Sandbox } from './helpers.js';

const API = 'http://api.auth.test:9090';
const TOKEN = 'svc_pat_authtest0123456789abcd';

describe('svc login / logout / whoami / hosts (HTTP stubbed with nock)', () => {
  let sb: Sandbox;
  useNock();
  beforeEach(async () => (sb = await sandbox()));
  afterEach(() => sb.cleanup());
  const run = (args: string[], o: { tty?: boolean; env?: Record<string, string>; stdin?: string; answers?: Array<number | boolean> } = {}) => {
    const p = scriptedPrompter(o.answers ?? []);
    return runSvc(args, {
      configPath: sb.configPath,
      env: o.env ?? {},
      cwd: sb.dir,
      prompter: p.prompter,
      ...(o.tty !== undefined ? { tty: o.tty } : {}),
      ...(o.stdin !== undefined ? { stdin: o.stdin } : {}),
    });
  };
  const me = (token = TOKEN) => nock(API, { reqheaders: { authorization: `Bearer ${token}` } }).get('/v1/accounts/me');
  const CODE = 'one-time-code-0123456789';
  const STATE = 'registeredstate0000000000000001';
  /** The callback and challenge the CLI registered (POST /v1/cli/login, no bearer), by state. */
  const registered = new Map<string, { callback: string; code_challenge: string; hostname: string }>();
  /** The server's half of the registration: the login id and the user code to print. */
  const register = (state = STATE) =>
    nock(API, { badheaders: ['authorization'] })
      .post('/v1/cli/login', (b: { callback?: string; code_challenge?: string; code_challenge_method?: string; hostname?: string }) => {
        if (b.code_challenge_method !== 'S256' || !/^[A-Za-z0-9_-]{43}$/.test(b.code_challenge ?? '')) return false;
        registered.set(state, { callback: b.callback!, code_challenge: b.code_challenge!, hostname: b.hostname ?? '' });
        return true;
      })
      .reply(201, { state, user_code: 'BCDF-GHJK', expires_at: '2030-01-01T00:00:00.000Z' });
  /** The CLI redeems the browser's one-time code (no bearer) with the verifier whose sha256 it registered. */
  const redeem = () =>
    nock(API, { badheaders: ['authorization'] })
      .post(
        '/v1/cli/login/token',
        (b: { state?: string; code?: string; code_verifier?: string }) =>
          b.code === CODE && typeof b.state === 'string' && createHash('sha256').update(b.code_verifier ?? '').digest('base64url') === registered.get(b.state)?.code_challenge,
      )
      .reply(201, { token: TOKEN, token_id: '00000000-0000-4000-8000-000000000009', name: 'svc on here', project_id: null, created_at: '2026-01-01T00:00:00.000Z', expires_at: null });

  /** Starts `svc login <args>` in-process and returns its callback URL and state once printed. */
  const startBrowserLogin = async (args: string[]) => {
    const { f, t, opened } = makeFactory({ configPath: sb.configPath, env: { SVC_DASHBOARD_URL: 'https://dash.test' }, cwd: sb.dir });
    const done = main(['login', ...args], f);
    let url: URL | undefined;
    for (let i = 0; i < 200 && !url; i++) {
      const m = /https:\/\/dash\.test\/cli\/login\?\S+/.exec(t.stderr());
      if (m) url = new URL(m[0]);
      else await new Promise((r) => setTimeout(r, 10));
    }
    if (!url) throw new Error(`no login URL in: ${t.stderr()}`);
    const state = url.searchParams.get('state')!;
    return { done, t, opened, url, callback: new URL(registered.get(state)!.callback), state };
  };
  const TOKEN_ID = '00000000-0000-4000-8000-000000000007';

  describe('login', () => {
    it('--token validates with /v1/accounts/me, stores it 0600 and makes the host active', async () => {
      await run(['hosts', 'add', 'mine', '--url', `${API}/v1`]);
      me().reply(200, ME);
      const r = await run(['login', '--host', 'mine', '--token', TOKEN]);
      expect(r.code).to.equal(0);
      expect(r.stderr).to.contain('Logged in to mine').and.contain('ada@example.com');
      expect(r.stdout).to.equal('');
      const c = await readConfig(sb.configPath);
      expect(c.active_host).to.equal('mine');
      expect(c.hosts.mine).to.deep.equal({ url: API, token: TOKEN, user: 'ada@example.com' });
      expect((await stat(sb.configPath)).mode & 0o777).to.equal(0o600);
    });

    it('--token - reads the token from stdin', async () => {
      me().reply(200, ME);
      const r = await run(['login', '--api', API, '--token', '-'], { stdin: `${TOKEN}\n` });
      expect(r.code).to.equal(0);
      const c = await readConfig(sb.configPath);
      expect(c.active_host).to.equal('api.auth.test:9090');
      expect(c.hosts['api.auth.test:9090']?.token).to.equal(TOKEN);
    });

    it('a rejected token is not stored (exit 1)', async () => {
      me('svc_pat_bad').reply(401, { error: 'Unauthorized', message: 'A valid token is required: Authorization: Bearer svc_pat_...' });
      const r = await run(['login', '--api', API, '--token', 'svc_pat_bad']);
      expect(r.code).to.equal(1);
      expect(r.stderr).to.equal(`error: the token was refused by api.auth.test:9090 (${API}): it is unknown, revoked or expired (HTTP 401)\n`);
      expect(await readConfig(sb.configPath)).to.deep.equal({ hosts: {} });
    });

    it('a project token is refused by /accounts/me (403): exit 1, nothing stored', async () => {
      me().reply(403, { error: 'Forbidden', message: 'Project tokens cannot use account routes.' });
      const r = await run(['login', '--api', API, '--token', TOKEN]);
      expect(r.code).to.equal(1);
      expect(r.stderr).to.contain('Project tokens cannot use account routes. (HTTP 403)');
    });

    it('browser flow: prints the URL first, opens no browser off a TTY, redeems the code from the localhost callback for the token', async () => {
      nock.enableNetConnect('127.0.0.1');
      try {
        me().reply(200, ME);
        register();
        const redeemed = redeem();
        const { done, t, opened, url, callback, state } = await startBrowserLogin(['--api', API]);
        expect(t.stderr().indexOf('BCDF-GHJK')).to.be.lessThan(t.stderr().indexOf('https://dash.test'));
        expect(t.stderr().indexOf('https://dash.test')).to.be.lessThan(t.stderr().indexOf('Waiting'));
        // The link carries the login id only: the callback and the challenge went to the server.
        expect([...url.searchParams.keys()]).to.deep.equal(['state']);
        expect(callback.hostname).to.equal('127.0.0.1');
        // A wrong state is refused and the flow keeps waiting.
        expect(await get(`${callback.href}?state=wrong&code=${CODE}`)).to.equal(400);
        expect(await get(`${callback.href}?state=${state}&token=${TOKEN}`)).to.equal(400);
        const page = await fetchPage(`${callback.href}?state=${state}&code=${CODE}`);
        expect(page.status).to.equal(200);
        expect(page.body).to.contain('Logged in.');
        // The browser hears "logged in" only once the token is redeemed and stored.
        expect((await readConfig(sb.configPath)).hosts['api.auth.test:9090']?.token).to.equal(TOKEN);
        expect(await done).to.equal(0);
        expect(redeemed.isDone()).to.equal(true);
        expect(opened).to.deep.equal([]);
        expect((await readConfig(sb.configPath)).hosts['api.auth.test:9090']?.token).to.equal(TOKEN);
      } finally {
        nock.disableNetConnect();
      }
    });

    it('browser flow: a code the server refuses gets an error page (escaped), not "Logged in"; exit 1, one line, nothing stored', async () => {
      nock.enableNetConnect('127.0.0.1');
      try {
        register();
        const refused = nock(API)
          .post('/v1/cli/login/token')
          .reply(400, { error: 'Invalid login code', message: 'The code <is> unknown, used or expired.' });
        const { done, t, callback, state } = await startBrowserLogin(['--api', API]);
        // A wrong state is still refused without ending the wait.
        expect((await fetchPage(`${callback.href}?state=wrong&code=${CODE}`)).status).to.equal(400);
        const page = await fetchPage(`${callback.href}?state=${state}&code=bogus`);
        expect(page.status).to.equal(500);
        expect(page.body).to.contain('Login failed').and.contain('The code &#60;is&#62; unknown').and.contain('svc login').and.not.contain('Logged in');
        expect(await done).to.equal(1);
        expect(refused.isDone()).to.equal(true);
        const errors = t.stderr().split('\n').filter((l) => l.startsWith('error:'));
        expect(errors).to.deep.equal(["error: the login failed: The code <is> unknown, used or expired. (HTTP 400); run 'svc login' again"]);
        expect(await readConfig(sb.configPath)).to.deep.equal({ hosts: {} });
      } finally {
        nock.disableNetConnect();
      }
    });

    it('browser flow: a registration the server refuses ends the login before any link is printed (exit 1, one line)', async () => {
      nock(API).post('/v1/cli/login').reply(400, { error: 'Validation failed', message: 'callback: not a loopback callback' });
      const r = await run(['login', '--api', API]);
      expect(r.code).to.equal(1);
      expect(r.stderr).to.not.contain('/cli/login?');
      expect(r.stderr.split('\n').filter((l) => l.startsWith('error:'))).to.deep.equal([
        "error: could not start the login: callback: not a loopback callback (HTTP 400); try again, or use 'svc login --token'",
      ]);
      expect(await readConfig(sb.configPath)).to.deep.equal({ hosts: {} });
    });

    it('browser flow: the server unreachable when redeeming: error page, exit 1', async () => {
      nock.enableNetConnect('127.0.0.1');
      try {
        register();
        nock(API).post('/v1/cli/login/token').replyWithError(Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' }));
        const { done, t, callback, state } = await startBrowserLogin(['--api', API]);
        const page = await fetchPage(`${callback.href}?state=${state}&code=${CODE}`);
        expect(page.status).to.equal(500);
        expect(page.body).to.contain('Login failed').and.contain('cannot reach');
        expect(await done).to.equal(1);
        expect(t.stderr()).to.contain(`error: the login failed: cannot reach ${API}/v1: ECONNREFUSED; is svc-server running at ${new URL(API).origin}?`).and.contain("; run 'svc login' again\n");
      } finally {
        nock.disableNetConnect();
      }
    });

    it('a new login revokes the token it replaces, with that token (its id from /accounts/me)', async () => {
      const OLD = 'svc_pat_oldtoken0123456789';
      await writeConfig(sb.configPath, { active_host: 'mine', hosts: { mine: { url: API, token: OLD, user: 'ada@example.com' } } });
      me().reply(200, { ...ME, token_id: '00000000-0000-4000-8000-000000000001' });
      me(OLD).reply(200, { ...ME, token_id: TOKEN_ID });
      const revoked = nock(API, { reqheaders: { authorization: `Bearer ${OLD}` } }).delete(`/v1/accounts/tokens/${TOKEN_ID}`).reply(204);
      const r = await run(['login', '--host', 'mine', '--token', TOKEN]);
      expect(r.code, r.stderr).to.equal(0);
      expect(revoked.isDone()).to.equal(true);
      expect(r.stderr).to.not.contain('warning');
      expect((await readConfig(sb.configPath)).hosts.mine?.token).to.equal(TOKEN);
    });

    it('a replaced token that cannot be revoked: one warning line, the new login stays', async () => {
      const OLD = 'svc_pat_oldtoken0123456789';
      await writeConfig(sb.configPath, { active_host: 'mine', hosts: { mine: { url: API, token: OLD, user: 'ada@example.com' } } });
      me().reply(200, ME);
      me(OLD).reply(200, { ...ME, token_id: TOKEN_ID });
      nock(API).delete(`/v1/accounts/tokens/${TOKEN_ID}`).reply(404, { error: 'Not found', message: 'Token not found.' });
      const r = await run(['login', '--host', 'mine', '--token', TOKEN]);
      expect(r.code, r.stderr).to.equal(0);
      expect(r.stderr.split('\n').filter((l) => l.startsWith('warning:'))).to.deep.equal([
        "warning: the previous token for mine was not revoked (Token not found. (HTTP 404)); revoke it on the dashboard's tokens page",
      ]);
      expect((await readConfig(sb.configPath)).hosts.mine?.token).to.equal(TOKEN);
    });

    it('a replaced token the server no longer accepts needs no revoking: no warning', async () => {
      const OLD = 'svc_pat_oldtoken0123456789';
      await writeConfig(sb.configPath, { active_host: 'mine', hosts: { mine: { url: API, token: OLD, user: 'ada@example.com' } } });
      me().reply(200, ME);
      me(OLD).reply(401, { error: 'Unauthorized', message: 'A valid token is required: Authorization: Bearer svc_pat_...' });
      const r = await run(['login', '--host', 'mine', '--token', TOKEN]);
      expect(r.code, r.stderr).to.equal(0);
      expect(r.stderr).to.not.contain('warning');
    });

    it('browser flow on a TTY opens the browser, but never under CI', async () => {
      const { run: login } = await import('../../cli/commands/login.js');
      for (const [env, expectOpen] of [[{}, true], [{ CI: 'true' }, false]] as const) {
        register();
        const { f, t, opened } = makeFactory({ configPath: sb.configPath, env: { ...env }, tty: true, cwd: sb.dir });
        try {
          await login({ f, api: API, timeoutMs: 50 });
          expect.fail('should time out');
        } catch (e) {
          expect((e as Error).message).to.contain('timed out');
        }
        expect(opened.length === 1, JSON.stringify(env)).to.equal(expectOpen);
        expect(t.stderr()).to.contain(`/cli/login?state=${STATE}`).and.contain('one-time code: BCDF-GHJK');
      }
    });
  });

  describe('logout and whoami', () => {
    beforeEach(() => writeConfig(sb.configPath, { active_host: 'mine', hosts: { mine: { url: API, token: TOKEN, user: 'ada@example.com' } } }));

    it('whoami prints the user and account', async () => {
      me().reply(200, ME);
      const r = await run(['whoami']);
      expect(r.code).to.equal(0);
      expect(r.stdout).to.equal(`Ada <ada@example.com>\naccount: Acme (${ME.account.account_id})\nhost: mine (${API})\n`);
    });

    it('whoami --json prints the API object', async () => {
      me().reply(200, ME);
      expect(JSON.parse((await run(['whoami', '--json'])).stdout)).to.deep.equal(ME);
    });

    it('whoami works from SVC_API_URL + SVC_EXECUTOR_TOKEN alone', async () => {
      me('svc_pat_exec').reply(200, ME);
      const r = await run(['whoami'], { env: { SVC_API_URL: `${API}/v1`, SVC_EXECUTOR_TOKEN: 'svc_pat_exec', SVC_CONFIG_FILE: '/nonexistent/x.json' } });
      expect(r.code).to.equal(0);
    });

    it('logout removes the token; a second logout fails with exit 1', async () => {
      const r = await run(['logout']);
      expect(r.code).to.equal(0);
      expect((await readConfig(sb.configPath)).hosts.mine).to.deep.equal({ url: API });
      const again = await run(['logout']);
      expect(again.code).to.equal(1);
      expect(again.stderr).to.equal('error: not logged in to mine\n');
    });

    it('without a token, operational commands fail before any request (exit 1)', async () => {
      const r = await run(['whoami', '--host', 'selfhost']);
      expect(r.code).to.equal(1);
      expect(r.stderr).to.contain("error: not logged in to selfhost; run 'svc login --host selfhost'");
    });
  });

  describe('hosts', () => {
    it('ls: built-ins always present, active marked; --json parses', async () => {
      const r = await run(['hosts', 'ls', '--json']);
      const hosts = JSON.parse(r.stdout) as Array<{ name: string; active: boolean; builtin: boolean }>;
      expect(hosts.map((h) => h.name)).to.deep.equal(['cloud', 'selfhost', 'local-dev', 'svc-internal-dev']);
      expect(hosts.filter((h) => h.active).map((h) => h.name)).to.deep.equal(['cloud']);
      expect(hosts.find((h) => h.name === 'selfhost')).to.include({ url: 'http://localhost:8080', builtin: true });
    });

    it('add, use, current, info (token masked), rm', async () => {
      expect((await run(['hosts', 'add', 'staging', '--url', 'https://staging.example/v1/'])).code).to.equal(0);
      expect((await run(['hosts', 'use', 'staging'])).code).to.equal(0);
      expect((await run(['hosts', 'current'])).stdout).to.equal('staging\n');
      const c = await readConfig(sb.configPath);
      c.hosts.staging!.token = 'svc_pat_secretsecret1234';
      await writeConfig(sb.configPath, c);
      const info = await run(['hosts', 'info']);
      expect(info.stdout).to.contain('url:\thttps://staging.example\n').and.contain('token:\tsvc_pat_********1234 (config)').and.not.contain('secretsecret');
      const ls = await run(['hosts', 'ls']);
      expect(ls.stdout).to.contain('*\tstaging\thttps://staging.example\tlogged in');
      expect((await run(['hosts', 'rm', 'staging', '--yes'])).code).to.equal(0);
      expect((await run(['hosts', 'current'])).stdout).to.equal('cloud\n');
    });

    it('current follows --host, then SVC_API_URL, then the link file', async () => {
      expect((await run(['hosts', 'current', '--host', 'local-dev'])).stdout).to.equal('local-dev\n');
      expect((await run(['hosts', 'current'], { env: { SVC_API_URL: API } })).stdout).to.equal('SVC_API_URL\n');
    });

    it('use without a name: a picker on a TTY, a usage error otherwise', async () => {
      const r = await run(['hosts', 'use'], { tty: true, answers: [1] });
      expect(r.code).to.equal(0);
      expect((await readConfig(sb.configPath)).active_host).to.equal('selfhost');
      const u = await run(['hosts', 'use']);
      expect(u.code).to.equal(2);
      expect(u.stderr).to.equal('error: host name required when not running interactively\n');
    });

    it('rm of the last added host asks on a TTY, needs --yes otherwise', async () => {
      await run(['hosts', 'add', 'only', '--url', API]);
      const declined = await run(['hosts', 'rm', 'only'], { tty: true, answers: [false] });
      expect(declined.code).to.equal(1);
      expect(Object.keys((await readConfig(sb.configPath)).hosts)).to.deep.equal(['only']);
      const piped = await run(['hosts', 'rm', 'only']);
      expect(piped.code).to.equal(2);
      const accepted = await run(['hosts', 'rm', 'only'], { tty: true, answers: [true] });
      expect(accepted.code).to.equal(0);
      expect((await readConfig(sb.configPath)).hosts).to.deep.equal({});
    });

    it('rm of a non-last host does not ask', async () => {
      await run(['hosts', 'add', 'a', '--url', API]);
      await run(['hosts', 'add', 'b', '--url', API]);
      expect((await run(['hosts', 'rm', 'a'])).code).to.equal(0);
    });

    it('errors: unknown host (1), built-in (1), missing --url (2), bad URL (2)', async () => {
      expect((await run(['hosts', 'use', 'nope'])).code).to.equal(1);
      expect((await run(['hosts', 'rm', 'cloud'])).code).to.equal(1);
      expect((await run(['hosts', 'add', 'cloud', '--url', API])).code).to.equal(1);
      const noUrl = await run(['hosts', 'add', 'x']);
      expect(noUrl.code).to.equal(2);
      expect(noUrl.stderr).to.equal('error: Missing required argument: url\n');
      expect((await run(['hosts', 'add', 'x', '--url', 'ftp://x'])).code).to.equal(2);
    });

    it('add --login runs the login flow for the new host', async () => {
      nock.enableNetConnect('127.0.0.1');
      try {
        me().reply(200, ME);
        register();
        redeem();
        const { f, t } = makeFactory({ configPath: sb.configPath, env: {}, cwd: sb.dir });
        const done = main(['hosts', 'add', 'withlogin', '--url', API, '--login'], f);
        let cb: string | undefined;
        for (let i = 0; i < 200 && !cb; i++) {
          const m = /\/cli\/login\?(\S+)/.exec(t.stderr());
          if (m) {
            const q = new URLSearchParams(m[1]);
            cb = `${registered.get(q.get('state')!)!.callback}?state=${q.get('state')}&code=${CODE}`;
          } else await new Promise((r) => setTimeout(r, 10));
        }
        expect(await get(cb!)).to.equal(200);
        expect(await done).to.equal(0);
        const raw = JSON.parse(await readFile(sb.configPath, 'utf8'));
        expect(raw).to.deep.equal({ active_host: 'withlogin', hosts: { withlogin: { url: API, token: TOKEN, user: 'ada@example.com' } } });
      } finally {
        nock.disableNetConnect();
      }
    });
  });
});

function get(url: string): Promise<number> {
  return new Promise((resolve, reject) => {
    http.get(url, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    }).on('error', reject);
  });
}

function fetchPage(url: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    http.get(url, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (body += c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    }).on('error', reject);
  });
}
