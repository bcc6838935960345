import { expect } from 'chai';
import { startTestServer, type TestServer } from '../../support/server.js';
import { client } from '../../support/http.js';
import { authedUrl, workDir, type WorkDir } from '../../support/git-client.js';
import { CR_ONLY_MESSAGE } from '../../../infra/git/pre-receive.js';

const SESSION = '3f2b8c1e-9a4d-4e5f-8b6a-1c2d3e4f5a6b';

describe('managed repositories: pushes over smart HTTP and the CR-only default branch', function () {
  this.timeout(120_000);
  let srv: TestServer;
  let w: WorkDir;
  let url: string;
  let project: { project_id: string; slug: string; repo_url: string; default_branch: string };

  before(async () => {
    srv = await startTestServer();
    const res = await client(srv.url, srv.token).post('/v1/projects', { name: 'Managed One', slug: 'managed-one' });
    expect(res.status, JSON.stringify(res.body)).to.equal(201);
    project = res.body.project;
    url = authedUrl(project.repo_url, srv.token);
    w = await workDir();
  });
  after(async () => {
    await w?.cleanup();
    await srv?.stop();
  });

  it('creates the project with repo_url on this server', () => {
    expect(project.repo_url).to.equal(`${srv.url}/git/managed-one.git`);
    expect(project.default_branch).to.equal('main');
  });

  it('clones the empty repository, and the first push creates main', async () => {
    const c = await w.run(['clone', '-q', url, '.']);
    expect(c.code, c.stderr).to.equal(0);
    await w.ok(['checkout', '-q', '-b', 'main']);
    await w.commit({ 'README.md': 'hello\n' }, 'first');
    const p = await w.run(['push', '-q', 'origin', 'main']);
    expect(p.code, p.stderr).to.equal(0);
    const tips = await client(srv.url, srv.token).get(`/v1/projects/managed-one`);
    expect(tips.status).to.equal(200);
  });

  it('refuses a push to main, with the message shown by git, and main does not move', async () => {
    const before = (await w.ok(['ls-remote', 'origin', 'refs/heads/main'])).split('\t')[0];
    await w.commit({ 'a.txt': 'a\n' }, 'direct to main');
    const p = await w.run(['push', 'origin', 'main']);
    expect(p.code).to.not.equal(0);
    expect(p.stderr).to.contain(`remote: svc: refused refs/heads/main: ${CR_ONLY_MESSAGE}`);
    expect(p.stderr).to.contain('[remote rejected]');
    const after = (await w.ok(['ls-remote', 'origin', 'refs/heads/main'])).split('\t')[0];
    expect(after).to.equal(before);
    // Deleting it is refused the same way.
    const d = await w.run(['push', 'origin', ':main']);
    expect(d.code).to.not.equal(0);
    expect(d.stderr).to.contain(CR_ONLY_MESSAGE);
    // One refused command refuses the whole push: the branch pushed alongside is not created.
    const both = await w.run(['push', 'origin', 'main', 'main:refs/heads/alongside']);
    expect(both.code).to.not.equal(0);
    expect(await w.ok(['ls-remote', 'origin', 'refs/heads/alongside'])).to.equal('');
    await w.ok(['reset', '-q', '--hard', 'HEAD~1']);
  });

  it('a session branch takes fast-forwards only: force-push and deletion are refused', async () => {
    await w.ok(['checkout', '-q', '-b', SESSION]);
    const one = await w.commit({ 's.txt': '1\n' }, 'one');
    expect((await w.run(['push', '-q', 'origin', 'HEAD'])).code).to.equal(0);
    await w.commit({ 's.txt': '2\n' }, 'two');
    expect((await w.run(['push', '-q', 'origin', 'HEAD'])).code).to.equal(0);
    const tip = await w.ok(['rev-parse', 'HEAD']);
    await w.ok(['reset', '-q', '--hard', one]);
    await w.commit({ 's.txt': 'rewritten\n' }, 'rewrite');
    const f = await w.run(['push', '--force', 'origin', 'HEAD']);
    expect(f.code).to.not.equal(0);
    expect(f.stderr).to.contain('no rewriting history');
    const d = await w.run(['push', 'origin', `:${SESSION}`]);
    expect(d.code).to.not.equal(0);
    expect(d.stderr).to.contain('no rewriting history');
    expect((await w.ok(['ls-remote', 'origin', `refs/heads/${SESSION}`])).split('\t')[0]).to.equal(tip);
    await w.ok(['reset', '-q', '--hard', tip]);
  });

  it('other branches may be force-pushed and deleted', async () => {
    await w.ok(['checkout', '-q', '-b', 'feature', 'main']);
    await w.commit({ 'f.txt': '1\n' }, 'f1');
    expect((await w.run(['push', '-q', 'origin', 'feature'])).code).to.equal(0);
    await w.ok(['commit', '-q', '--amend', '-m', 'f1 amended']);
    expect((await w.run(['push', '-q', '--force', 'origin', 'feature'])).code).to.equal(0);
    expect((await w.run(['push', '-q', 'origin', ':feature'])).code).to.equal(0);
  });

  it('CR open, diff, preview and merge work on the managed repo; main moves only by the merge', async () => {
    const api = client(srv.url, srv.token);
    const base = '/v1/projects/managed-one/change-requests';
    const opened = await api.post(base, { title: 'session work', head_ref: SESSION });
    expect(opened.status, JSON.stringify(opened.body)).to.equal(201);
    const n = opened.body.change_request.number;
    const diff = await api.get(`${base}/${n}/diff`);
    expect(diff.status).to.equal(200);
    expect(diff.body.files.map((f: { path: string }) => f.path)).to.deep.equal(['s.txt']);
    const preview = await api.get(`${base}/${n}/merge-preview`);
    expect(preview.body).to.include({ can_merge: true, can_fast_forward: true });
    const merged = await api.post(`${base}/${n}/merge`, {});
    expect(merged.status, JSON.stringify(merged.body)).to.equal(200);
    const sha = merged.body.change_request.merge_commit_sha;
    await w.ok(['fetch', '-q', 'origin']);
    expect(await w.ok(['rev-parse', 'origin/main'])).to.equal(sha);
  });

  it('deleting the project removes its repository', async () => {
    const api = client(srv.url, srv.token);
    const made = await api.post('/v1/projects', { name: 'Doomed' });
    expect(made.status).to.equal(201);
    const { existsSync } = await import('node:fs');
    const { default: path } = await import('node:path');
    const dir = path.join(srv.dataDir, 'repos', `${made.body.project.project_id}.git`);
    expect(existsSync(dir)).to.equal(true);
    const del = await api.call('DELETE', `/v1/projects/${made.body.project.slug}`);
    expect(del.status).to.equal(204);
    expect(existsSync(dir)).to.equal(false);
    expect((await api.get(`/v1/projects/${made.body.project.slug}`)).status).to.equal(404);
  });
});
