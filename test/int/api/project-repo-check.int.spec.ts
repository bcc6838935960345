import { expect } from 'chai';
import { mkdir, mkdtemp, rename, rm } from 'node:fs/promises';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { runSvc, sandbox, type Sandbox } from '../../cli/helpers.js';
import { client } from '../../support/http.js';
import { serveOverHttp } from '../../support/http-remote.js';
import { fixtureRepo, type FixtureRepo } from '../../support/repo.js';
import { startTestServer, type TestServer } from '../../support/server.js';
import { fakeRuntime, killSandboxes, killSandboxesUnder, waitForStatus } from '../../support/sessions.js';

/**
 * A project's repository is checked when the project is created (a typo is a 400 naming
 * the path or host and why), and a repository that goes away afterwards is named, with the
 * cause, by the API, the CLI and the session that needed it.
 */
describe('project repositories are checked at creation and named when they fail', function () {
  this.timeout(60_000);
  let srv: TestServer;
  let repo: FixtureRepo;
  let scratch: string;
  before(async () => {
    srv = await startTestServer({ env: { SVC_REPO_CHECK_TIMEOUT_MS: '700', SVC_AGENT_RUNTIME: fakeRuntime } });
    repo = await fixtureRepo();
    scratch = await mkdtemp(path.join(os.tmpdir(), 'svc-repo-check-'));
  });
  after(async () => {
    if (srv) await killSandboxes(srv.db);
    await srv?.stop();
    if (srv) await killSandboxesUnder(srv.dataDir);
    await repo?.cleanup();
    if (scratch) await rm(scratch, { recursive: true, force: true });
  });

  it('a file:// path that does not exist, or is no git repository, is a 400 naming the path and the cause', async () => {
    const api = client(srv.url, srv.token);
    const missing = path.join(scratch, 'nope.git');
    const r = await api.post('/v1/projects', { name: 'ghost', repo_url: `file://${missing}` });
    expect(r.status).to.equal(400);
    expect(r.body).to.include({ error: 'Repository not reachable', repository: missing, cause: 'not found' });
    expect(r.body.message).to.include(missing).and.include('git init --bare');
    const plain = path.join(scratch, 'plain');
    await mkdir(plain);
    const p = await api.post('/v1/projects', { name: 'plain', repo_url: `file://${plain}` });
    expect(p.status).to.equal(400);
    expect(p.body).to.include({ repository: plain, cause: 'not a git repository' });
    expect((await api.get('/v1/projects')).body.projects.map((x: { name: string }) => x.name)).to.not.include.members(['ghost', 'plain']);
  });

  it('a remote must answer ls-remote: wrong credentials, a missing repository, a closed port and a silent host are 400s naming the host and the cause', async () => {
    const api = client(srv.url, srv.token);
    const served = await serveOverHttp(repo);
    const closed = net.createServer();
    const silent = net.createServer(() => {}); // accepts, never answers
    await new Promise<void>((res) => closed.listen(0, '127.0.0.1', res));
    const closedPort = (closed.address() as net.AddressInfo).port;
    await new Promise<void>((res) => closed.close(() => res()));
    await new Promise<void>((res) => silent.listen(0, '127.0.0.1', res));
    const silentPort = (silent.address() as net.AddressInfo).port;
    try {
      expect((await api.post('/v1/projects', { name: 'over http', repo_url: served.url })).status).to.equal(201);
      const wrong = new URL(served.url);
      wrong.password = 'not-the-password';
      const gone = new URL(served.url);
      gone.pathname = '/nope.git';
      for (const [url, cause] of [
        [wrong.href, 'auth refused'],
        [gone.href, 'not found'],
        [`http://127.0.0.1:${closedPort}/x.git`, 'unreachable'],
        [`http://127.0.0.1:${silentPort}/x.git`, 'no answer in time'],
      ] as const) {
        const started = Date.now();
        const r = await api.post('/v1/projects', { name: 'remote', repo_url: url });
        expect(r.status, url).to.equal(400);
        expect(r.body.cause, url).to.equal(cause);
        expect(r.body.message, url).to.include('(host 127.0.0.1)').and.include(cause);
        expect(r.body.message, 'never the password').to.not.include('not-the-password').and.not.include('fixture-remote-pw');
        expect(Date.now() - started, `${url} within the budget`).to.be.below(10_000);
      }
    } finally {
      silent.close();
      await served.close();
    }
  });

  it('the probe follows no redirect: a remote that answers 302 to another host gets a 400, and the other host sees no request (nor the credentials)', async () => {
    const api = client(srv.url, srv.token);
    const seen: Array<string | undefined> = [];
    const other = http.createServer((req, res) => {
      seen.push(req.headers.authorization);
      res.writeHead(401, { 'www-authenticate': 'Basic realm="x"' }).end();
    });
    await new Promise<void>((r) => other.listen(0, '127.0.0.1', r));
    const otherPort = (other.address() as net.AddressInfo).port;
    const redirecting = http.createServer((req, res) => {
      res.writeHead(302, { location: `http://127.0.0.1:${otherPort}${req.url}` }).end();
    });
    await new Promise<void>((r) => redirecting.listen(0, '127.0.0.1', r));
    const port = (redirecting.address() as net.AddressInfo).port;
    try {
      const r = await api.post('/v1/projects', { name: 'redirect', repo_url: `http://alice:s3cret-pw@127.0.0.1:${port}/x.git` });
      expect(r.status).to.equal(400);
      expect(r.body.message).to.include(`127.0.0.1:${port}`).and.not.include('s3cret-pw');
      expect(seen, 'the redirect target was never asked').to.deep.equal([]);
    } finally {
      redirecting.close();
      other.close();
    }
  });

  it('a repository deleted after creation: the API, the CLI and a new session name its path and the cause', async () => {
    const api = client(srv.url, srv.token);
    const other = await fixtureRepo();
    const sb: Sandbox = await sandbox();
    try {
      const made = await api.post('/v1/projects', { name: 'Doomed', slug: 'doomed', repo_url: other.url });
      expect(made.status).to.equal(201);
      await other.commit('topic', { 'a.txt': 'a\n' });
      await rename(other.bare, `${other.bare}.moved`);

      // Opening a CR still works (anchored without SHAs, as the spec says); what needs the repository names it.
      expect((await api.post('/v1/projects/doomed/change-requests', { title: 'T', head_ref: 'topic' })).status).to.equal(201);
      const diff = await api.get('/v1/projects/doomed/change-requests/1/diff');
      expect(diff.status, JSON.stringify(diff.body)).to.equal(503);
      expect(diff.body).to.include({ repository: other.bare, cause: 'not found' });
      expect(diff.body.message).to.include(other.bare).and.include('not found');

      const cli = await runSvc(['cr', 'diff', '1'], {
        configPath: sb.configPath,
        cwd: sb.dir,
        env: { SVC_API_URL: `${srv.url}/v1`, SVC_CLI_TOKEN: srv.token, SVC_PROJECT_ID: 'doomed' },
      });
      expect(cli.code).to.not.equal(0);
      expect(cli.stderr).to.include(other.bare).and.include('not found');

      const s = await api.post('/v1/projects/doomed/sessions', {});
      if (s.status === 201) {
        const failed = await waitForStatus(api, `/v1/projects/doomed/sessions/${s.body.session.session_id}`, ['failed']);
        expect(failed.error.message).to.include(other.bare).and.include('not found');
      } else {
        expect(s.status).to.equal(503);
        expect(s.body.message).to.include(other.bare).and.include('not found');
      }
    } finally {
      await rename(`${other.bare}.moved`, other.bare).catch(() => {});
      await other.cleanup();
      await sb.cleanup();
    }
  });
});
