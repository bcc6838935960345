import { expect } from 'chai';
import { startTestServer, type TestServer } from '../../support/server.js';
import { fixtureRepo, type FixtureRepo } from '../../support/repo.js';
import { client } from '../../support/http.js';
import { runSvc, sandbox, type Sandbox } from '../../cli/helpers.js';

/**
 * `GET /v1/projects/:projectId/compare?base=&head=`: two live branches before any CR, and
 * `svc cr open` refusing a head that adds nothing (the agent-loop issue: an agent opened a
 * CR with no changes and merging it said "merged").
 */
describe('compare API and `svc cr open` on a head that adds nothing', function () {
  this.timeout(60_000);
  let srv: TestServer;
  let repo: FixtureRepo;
  let api: ReturnType<typeof client>;
  let P: string;
  let sb: Sandbox;

  before(async () => {
    srv = await startTestServer();
    api = client(srv.url, srv.token);
    repo = await fixtureRepo();
    const p = await api.post('/v1/projects', { name: 'compared', slug: 'compared', repo_url: repo.url });
    expect(p.status).to.equal(201);
    P = `/v1/projects/${p.body.project.project_id}`;
    await repo.commit('ahead', { 'a.txt': 'a\n' });
    await repo.commit('main', { 'm.txt': 'main moves on\n' });
    // A branch left at an older commit of main: every commit on it is in main already.
    repo.git('push', '-q', 'origin', 'refs/remotes/origin/main~1:refs/heads/stale-copy');
    sb = await sandbox();
  });
  after(async () => {
    await sb?.cleanup();
    await srv?.stop();
    await repo?.cleanup();
  });

  it('a head with commits of its own: is_up_to_date false; base defaults to the default branch', async () => {
    const r = await api.get(`${P}/compare?head=ahead`);
    expect(r.status, JSON.stringify(r.body)).to.equal(200);
    expect(r.body).to.include({ base_ref: 'main', head_ref: 'ahead', is_up_to_date: false, can_merge: true });
    expect(r.body.head_sha).to.equal(repo.tip('ahead'));
    expect(r.body.base_sha).to.equal(repo.tip('main'));
  });

  it('a head already in its base: is_up_to_date true (an explicit base too)', async () => {
    const r = await api.get(`${P}/compare?${new URLSearchParams({ base: 'main', head: 'stale-copy' })}`);
    expect(r.status, JSON.stringify(r.body)).to.equal(200);
    expect(r.body).to.include({ base_ref: 'main', head_ref: 'stale-copy', is_up_to_date: true });
  });

  it('bad input: a missing branch is a 404 naming it; option-like or malformed names are 400 before git runs', async () => {
    const missing = await api.get(`${P}/compare?head=nope`);
    expect(missing.status).to.equal(404);
    expect(missing.body.message).to.contain("'nope'");
    for (const head of ['--upload-pack=touch /tmp/pwned', 'a..b', 'x@{1}', '']) {
      const r = await api.get(`${P}/compare?${new URLSearchParams({ head })}`);
      expect(r.status, head).to.equal(400);
      expect(r.body.error).to.be.a('string');
    }
    expect((await api.get(`${P}/compare`)).status, 'no head').to.equal(400);
  });

  it('another tenant gets 404 for the project', async () => {
    const other = await srv.newUser('other@example.test');
    expect((await client(srv.url, other.token).get(`${P}/compare?head=ahead`)).status).to.equal(404);
  });

  it('`svc cr open` refuses a head that adds nothing (exit 1, nothing opened); --allow-empty opens it', async () => {
    const env = { SVC_API_URL: `${srv.url}/v1`, SVC_CLI_TOKEN: srv.token, SVC_PROJECT_ID: 'compared' };
    const refused = await runSvc(['cr', 'open', '--title', 'Nothing', '--head', 'stale-copy'], { configPath: sb.configPath, env, cwd: sb.dir });
    expect(refused.code).to.equal(1);
    expect(refused.stderr).to.contain("error: 'stale-copy' adds nothing to 'main'");
    expect((await api.get(`${P}/change-requests?status=all`)).body.change_requests).to.have.length(0);

    const ok = await runSvc(['cr', 'open', '--title', 'Real work', '--head', 'ahead'], { configPath: sb.configPath, env, cwd: sb.dir });
    expect(ok.code, ok.stderr).to.equal(0);
    const forced = await runSvc(['cr', 'open', '--title', 'Nothing, on purpose', '--head', 'stale-copy', '--allow-empty'], { configPath: sb.configPath, env, cwd: sb.dir });
    expect(forced.code, forced.stderr).to.equal(0);
    const titles = (await api.get(`${P}/change-requests?status=all`)).body.change_requests.map((c: { title: string }) => c.title);
    expect(titles).to.have.members(['Real work', 'Nothing, on purpose']);
  });
});
