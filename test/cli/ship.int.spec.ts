import { expect } from 'chai';
import { existsSync } from 'node:fs';
import { mkdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { runSvc, sandbox, type Sandbox } from './helpers.js';
import { writeConfig } from '../../cli/config.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { client } from '../support/http.js';
import { gitEnv, gitOk } from '../support/git-client.js';

describe('svc ship against a running server', function () {
  this.timeout(120_000);
  let srv: TestServer;
  let sb: Sandbox;
  let app: string;
  const env = () => gitEnv({ HOME: sb.home, SVC_CONFIG_FILE: sb.configPath });
  const svc = (args: string[]) => runSvc(args, { configPath: sb.configPath, env: env(), cwd: app });
  const git = (args: string[]) => gitOk(app, args, { env: { HOME: sb.home } });

  before(async () => {
    srv = await startTestServer();
    sb = await sandbox();
    await writeConfig(sb.configPath, { active_host: 'local', hosts: { local: { url: srv.url, token: srv.token } } });
    app = path.join(sb.dir, 'app');
    await mkdir(app);
  });
  after(async () => {
    await sb?.cleanup();
    await srv?.stop();
  });

  it('mkdir app && svc init && git commit && svc ship: project, link, remote and main', async () => {
    expect((await svc(['init'])).code).to.equal(0);
    await git(['add', '-A']);
    await git(['commit', '-q', '-m', 'init']);
    const r = await svc(['ship']);
    expect(r.code, r.stderr).to.equal(0);
    expect(r.stderr).to.contain('Creating project app on local');
    const link = JSON.parse(await readFile(path.join(app, '.svc', 'link.json'), 'utf8'));
    expect(link).to.include({ host: 'local', host_url: srv.url });
    const project = (await client(srv.url, srv.token).get(`/v1/projects/${link.project_id}`)).body.project;
    expect(project.repo_url).to.equal(`${srv.url}/git/app.git`);
    expect(r.stdout).to.equal(`${project.repo_url}\n`);
    expect(await git(['remote', 'get-url', 'svc'])).to.equal(project.repo_url);
    const remoteMain = (await git(['ls-remote', 'svc', 'refs/heads/main'])).split('\t')[0];
    expect(remoteMain).to.equal(await git(['rev-parse', 'HEAD']));
    const config = await readFile(path.join(app, '.git', 'config'), 'utf8');
    expect(config).to.not.contain(srv.token);
    expect(config).to.not.contain('svc_pat_');
    expect(existsSync(path.join(app, '.svc', 'link.json'))).to.equal(true);
  });

  it('shipping the default branch again is refused with the CR-only message', async () => {
    await git(['commit', '-q', '--allow-empty', '-m', 'straight to main']);
    const r = await svc(['ship']);
    expect(r.code).to.equal(1);
    expect(r.stderr).to.contain('the default branch moves only through change requests: push a branch and open one with `svc cr open`');
    await git(['reset', '-q', '--hard', 'HEAD~1']);
  });

  it('a feature branch: pushed and a CR opened; a second ship reports the open CR (--json)', async () => {
    await git(['switch', '-q', '-c', 'add-readme']);
    await (await import('node:fs/promises')).writeFile(path.join(app, 'README.md'), '# app\n');
    await git(['add', '-A']);
    await git(['commit', '-q', '-m', 'Add a README']);
    const r = await svc(['ship']);
    expect(r.code, r.stderr).to.equal(0);
    expect(r.stdout).to.match(/^#1\n.*\/change-requests\/1\n$/);
    expect(r.stderr).to.contain('Opened change request #1: add-readme → main');

    await (await import('node:fs/promises')).writeFile(path.join(app, 'README.md'), '# app\n\nmore\n');
    await git(['commit', '-q', '-am', 'More README']);
    const again = await svc(['deploy', '--json']);
    expect(again.code, again.stderr).to.equal(0);
    const out = JSON.parse(again.stdout);
    expect(out.project.slug).to.equal('app');
    expect(out.change_request).to.include({ number: 1, head_ref: 'add-readme', title: 'Add a README' });
    expect(again.stderr).to.contain('CR #1 is already open');
    expect((await git(['ls-remote', 'svc', 'refs/heads/add-readme'])).split('\t')[0]).to.equal(await git(['rev-parse', 'HEAD']));

    // The work reaches main only through the merge.
    const merged = await client(srv.url, srv.token).post(`/v1/projects/app/change-requests/1/merge`, {});
    expect(merged.status).to.equal(200);
    await git(['fetch', '-q', 'svc']);
    expect(await git(['rev-parse', 'svc/main'])).to.equal(merged.body.change_request.merge_commit_sha);
  });

  it('outside a git repository, or with no commits, it says what to do', async () => {
    const bare = path.join(sb.dir, 'empty');
    await mkdir(bare);
    const r = await runSvc(['ship'], { configPath: sb.configPath, env: env(), cwd: bare });
    expect(r.code).to.equal(1);
    expect(r.stderr).to.contain('not inside a git repository');
    await gitOk(bare, ['init', '-q', '-b', 'main']);
    const r2 = await runSvc(['ship'], { configPath: sb.configPath, env: env(), cwd: bare });
    expect(r2.code).to.equal(1);
    expect(r2.stderr).to.contain('no commits yet');
  });
});
