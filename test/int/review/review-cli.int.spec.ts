import { expect } from 'chai';
import { runSvc, sandbox, type Sandbox } from '../../cli/helpers.js';
import { startTestServer, type TestServer } from '../../support/server.js';
import { fixtureRepo, type FixtureRepo } from '../../support/repo.js';
import { client } from '../../support/http.js';

/** `svc cr comment|comments|resolve|reviewed|send-to-agent` and the comments in `svc cr show`, against a real server. */
describe('svc cr review commands (real server)', function () {
  this.timeout(60_000);
  let srv: TestServer;
  let repo: FixtureRepo;
  let sb: Sandbox;
  before(async () => {
    srv = await startTestServer();
    repo = await fixtureRepo();
    sb = await sandbox();
    await client(srv.url, srv.token).post('/v1/projects', { name: 'cli review', slug: 'clirev', repo_url: repo.url });
  });
  after(async () => {
    await srv?.stop();
    await repo?.cleanup();
    await sb?.cleanup();
  });
  const svc = (args: string[]) =>
    runSvc(args, { configPath: sb.configPath, cwd: sb.dir, env: { SVC_API_URL: `${srv.url}/v1`, SVC_CLI_TOKEN: srv.token, SVC_PROJECT_ID: 'clirev' } });

  it('comments on a line and generally, lists, resolves, marks reviewed; usage errors exit 2, refusals exit 1', async () => {
    const head = await repo.commit('feat-cli', { 'a.txt': 'alpha\nbeta\n' });
    expect((await svc(['cr', 'open', '--title', 'CLI review', '--head', 'feat-cli'])).code).to.equal(0);

    const line = await svc(['cr', 'comment', '1', '--body', 'beta?', '--path', 'a.txt', '--line', '2', '--json']);
    expect(line.code, line.stderr).to.equal(0);
    const c = JSON.parse(line.stdout);
    expect(c).to.include({ path: 'a.txt', line: 2, side: 'RIGHT', commit_sha: head });
    expect((await svc(['cr', 'comment', '#1', '--body', 'Overall fine.'])).stderr).to.include('Commented on change request #1');

    expect((await svc(['cr', 'comment', '1', '--body', 'x', '--path', 'a.txt'])).code, '--path without --line').to.equal(2);
    const bad = await svc(['cr', 'comment', '1', '--body', 'x', '--path', 'a.txt', '--line', '9']);
    expect(bad.code).to.equal(1);
    expect(bad.stderr).to.match(/^error: .*line 9/m);

    const listed = await svc(['cr', 'comments', '1']);
    expect(listed.stdout).to.include('2 comments, 2 unresolved').and.include('[open] a.txt:2').and.include('    beta?');
    const resolved = await svc(['cr', 'resolve', '1', c.comment_id]);
    expect(resolved.code, resolved.stderr).to.equal(0);
    expect((await svc(['cr', 'comments', '1', '--json'])).stdout).to.include('"resolved": true');
    expect((await svc(['cr', 'show', '1'])).stdout).to.include('[resolved] a.txt:2').and.include('[open] general');

    const reviewed = await svc(['cr', 'reviewed', '1', '--json']);
    expect(JSON.parse(reviewed.stdout)).to.include({ reviewed_head_sha: head, changed: false });
    const send = await svc(['cr', 'send-to-agent', '1']);
    expect(send.code).to.equal(1);
    expect(send.stderr).to.include('was not opened by a session');
  });
});
