/**
 * The new-user flow against the real server (fresh database, real git): `svc hosts add`,
 * `login --token`, `projects link`, then `cr open / show / diff / merge`, all through the
 * built binary as separate processes.
 */
import { expect } from 'chai';
import { mkdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { client } from '../support/http.js';
import { fixtureRepo, type FixtureRepo } from '../support/repo.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { sandbox, spawnSvc, type Sandbox } from './helpers.js';

describe('svc CLI against the real server (e2e)', function () {
  this.timeout(120_000);
  let ownCluster: { mochaGlobalTeardown(): Promise<void> } | undefined;
  let srv: TestServer;
  let repo: FixtureRepo;
  let sb: Sandbox;
  let projectId: string;
  let workdir: string;

  before(async () => {
    // Under `mocha --no-config` the global fixtures did not run: start the cluster here.
    if (!process.env.SVC_TEST_PG_URL) {
      const fixtures = await import('../support/fixtures.js');
      await fixtures.mochaGlobalSetup();
      ownCluster = fixtures;
    }
    srv = await startTestServer();
    repo = await fixtureRepo();
    sb = await sandbox();
    const p = await client(srv.url, srv.token).post('/v1/projects', { name: 'Widget', repo_url: repo.url });
    expect(p.status, JSON.stringify(p.body)).to.equal(201);
    projectId = p.body.project.project_id;
    workdir = path.join(sb.dir, 'widget');
    await mkdir(path.join(workdir, 'src'), { recursive: true });
  });
  after(async () => {
    await srv?.stop();
    await repo?.cleanup();
    await sb?.cleanup();
    await ownCluster?.mochaGlobalTeardown();
  });

  const svc = (args: string[], cwd = workdir) => spawnSvc(args, { cwd, env: { HOME: sb.home, SVC_CONFIG_FILE: sb.configPath } });

  it('runs the new-user flow: hosts add, login, link, cr open/show/diff/merge', async () => {
    const add = await svc(['hosts', 'add', 'local', '--url', srv.url]);
    expect(add.code, add.stderr).to.equal(0);

    const login = await svc(['login', '--host', 'local', '--token', srv.token]);
    expect(login.code, login.stderr).to.equal(0);
    expect(login.stderr).to.contain('Logged in to local');
    expect((await svc(['hosts', 'current'])).stdout).to.equal('local\n');

    const who = await svc(['whoami', '--json']);
    expect(who.code, who.stderr).to.equal(0);
    expect(JSON.parse(who.stdout).user.email).to.equal('owner@example.test');

    const link = await svc(['projects', 'link', projectId]);
    expect(link.code, link.stderr).to.equal(0);
    expect(JSON.parse(await readFile(path.join(workdir, '.svc', 'link.json'), 'utf8'))).to.include({ project_id: projectId, host: 'local' });

    const headSha = await repo.commit('feature', { 'hello.txt': 'hello\n' });
    // From a subdirectory: the link file above is found.
    const sub = path.join(workdir, 'src');
    const open = await svc(['cr', 'open', '--title', 'Add hello', '--body', 'Greets.', '--head', 'feature'], sub);
    expect(open.code, open.stderr).to.equal(0);
    expect(open.stdout).to.match(new RegExp(`^#1\\n.*/projects/${projectId}/change-requests/1\\n$`));
    expect(open.stderr).to.contain(`host: local (${srv.url})`);

    const show = await svc(['cr', 'show', '#1'], sub);
    expect(show.code, show.stderr).to.equal(0);
    expect(show.stdout).to.contain('title:\tAdd hello').and.contain('status:\topen').and.contain('preview:\tfast-forward');

    const diff = await svc(['cr', 'diff', '1'], sub);
    expect(diff.code, diff.stderr).to.equal(0);
    expect(diff.stdout).to.contain('+++ b/hello.txt').and.contain('+hello').and.not.contain('\x1b[');

    const ls = await svc(['cr', 'ls', '--json'], sub);
    expect(JSON.parse(ls.stdout).map((c: { number: number }) => c.number)).to.deep.equal([1]);

    const merge = await svc(['cr', 'merge', '1'], sub);
    expect(merge.code, merge.stderr).to.equal(0);
    expect(merge.stderr).to.contain('Merged change request #1 into main (fast-forward');
    expect(repo.tip('main')).to.equal(headSha);

    const after = await svc(['cr', 'show', '1', '--json'], sub);
    expect(JSON.parse(after.stdout)).to.include({ status: 'merged', merge_commit_sha: headSha });
    expect((await svc(['cr', 'ls'], sub)).stdout).to.equal('');
    expect((await svc(['cr', 'ls', '--status', 'merged'], sub)).stdout).to.match(/^1\tAdd hello\tfeature\tmain\tmerged\t/);
  });

  it('a conflicting CR: show lists the conflict, merge exits 1, close and reopen work', async () => {
    await repo.commit('main', { 'shared.txt': 'base\n' });
    await repo.commit('left', { 'shared.txt': 'left\n' }, { from: 'main' });
    await repo.commit('main', { 'shared.txt': 'right\n' });
    const open = await svc(['cr', 'open', '--title', 'Left', '--head', 'left']);
    expect(open.code, open.stderr).to.equal(0);
    const n = /^#(\d+)/.exec(open.stdout)![1]!;

    const show = await svc(['cr', 'show', n]);
    expect(show.stdout).to.contain('preview:\tconflicts').and.contain('conflicts:\tshared.txt');

    const merge = await svc(['cr', 'merge', n]);
    expect(merge.code).to.equal(1);
    expect(merge.stderr).to.match(/error: merge failed: conflicts in shared\.txt/);

    expect((await svc(['cr', 'close', n])).code).to.equal(0);
    expect((await svc(['cr', 'reopen', n])).code).to.equal(0);
    const reopenAgain = await svc(['cr', 'reopen', n]);
    expect(reopenAgain.code).to.equal(1);
    expect(reopenAgain.stderr).to.match(/\nerror: [^\n]*\(HTTP 409\)\n$/);
  });

  it('a project token is refused by login (account route) but works for cr commands through the environment', async () => {
    const minted = await client(srv.url, srv.token).post(`/v1/projects/${projectId}/cli-token`, {});
    expect(minted.status, JSON.stringify(minted.body)).to.equal(201);
    const env = { HOME: sb.home, SVC_CONFIG_FILE: path.join(sb.dir, 'none.json'), SVC_API_URL: `${srv.url}/v1`, SVC_CLI_TOKEN: minted.body.token, SVC_PROJECT_ID: projectId };
    const ls = await spawnSvc(['cr', 'ls', '--status', 'all', '--json'], { env, cwd: sb.dir });
    expect(ls.code, ls.stderr).to.equal(0);
    expect(JSON.parse(ls.stdout).length).to.be.greaterThan(0);
    const login = await spawnSvc(['login', '--api', srv.url, '--token', minted.body.token], { env: { HOME: sb.home, SVC_CONFIG_FILE: path.join(sb.dir, 'p.json') } });
    expect(login.code).to.equal(1);
    expect(login.stderr).to.contain('(HTTP 403)');
  });
});
