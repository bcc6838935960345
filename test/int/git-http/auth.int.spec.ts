import { expect } from 'chai';
import { gzipSync } from 'node:zlib';
import { startTestServer, type TestServer } from '../../support/server.js';
import { client } from '../../support/http.js';
import { authedUrl, gitOk, workDir, type WorkDir } from '../../support/git-client.js';
import { mintToken } from '../../../services/tokens/service.js';

const pkt = (s: string) => `${(s.length + 4).toString(16).padStart(4, '0')}${s}`;
const basic = (token: string) => `Basic ${Buffer.from(`x-access-token:${token}`).toString('base64')}`;

describe('smart HTTP: who may clone, fetch and push', function () {
  this.timeout(120_000);
  let srv: TestServer;
  let repoUrl: string;
  let projectId: string;
  let seed: WorkDir;
  const dirs: WorkDir[] = [];
  const fresh = async () => {
    const w = await workDir();
    dirs.push(w);
    return w;
  };

  before(async () => {
    srv = await startTestServer();
    const made = await client(srv.url, srv.token).post('/v1/projects', { name: 'Auth Repo', slug: 'auth-repo' });
    expect(made.status).to.equal(201);
    repoUrl = made.body.project.repo_url;
    projectId = made.body.project.project_id;
    seed = await fresh();
    await seed.ok(['init', '-q', '-b', 'main']);
    await seed.commit({ 'secret-plan.txt': 'the plan\n' }, 'seed');
    await seed.ok(['push', '-q', authedUrl(repoUrl, srv.token), 'main']);
  });
  after(async () => {
    for (const d of dirs) await d.cleanup();
    await srv?.stop();
  });

  it('no credentials: 401 with a Basic challenge, no refs in the body; git clone fails', async () => {
    const res = await fetch(`${repoUrl}/info/refs?service=git-upload-pack`);
    expect(res.status).to.equal(401);
    expect(res.headers.get('www-authenticate')).to.equal('Basic realm="svc"');
    const body = await res.text();
    expect(JSON.parse(body)).to.have.property('error', 'Unauthorized');
    expect(body).to.not.contain('refs/heads');
    const w = await fresh();
    const r = await w.run(['clone', '-q', repoUrl, '.']);
    expect(r.code).to.not.equal(0);
    expect(r.stderr).to.match(/could not read Username|Authentication failed/);
    expect(await w.run(['rev-parse', '--verify', '-q', 'HEAD']).then((x) => x.stdout)).to.equal('');
  });

  it('a bad or unknown token: 401', async () => {
    for (const header of [basic('svc_pat_' + 'x'.repeat(43)), basic('not-a-token'), 'Basic !!!', 'Digest abc']) {
      const res = await fetch(`${repoUrl}/info/refs?service=git-upload-pack`, { headers: { authorization: header } });
      expect(res.status, header).to.equal(401);
    }
  });

  it('a user token: clone (protocol v0 and v2), fetch and push', async () => {
    for (const version of ['0', '2']) {
      const w = await fresh();
      await w.ok(['-c', `protocol.version=${version}`, 'clone', '-q', authedUrl(repoUrl, srv.token), '.']);
      expect(await w.ok(['log', '--format=%s'])).to.equal('seed');
      await w.ok(['-c', `protocol.version=${version}`, 'fetch', '-q', 'origin']);
    }
    const w = await fresh();
    await w.ok(['clone', '-q', authedUrl(repoUrl, srv.token), '.']);
    await w.ok(['checkout', '-q', '-b', 'user-branch']);
    await w.commit({ 'u.txt': 'u\n' });
    await w.ok(['push', '-q', 'origin', 'user-branch']);
  });

  it('the repository answers by project id as well as by slug', async () => {
    const w = await fresh();
    const byId = repoUrl.replace('/auth-repo.git', `/${projectId}.git`);
    await w.ok(['clone', '-q', authedUrl(byId, srv.token), '.']);
    expect(await w.ok(['log', '--format=%s'])).to.equal('seed');
  });

  it('a project token of this project (the clone credential is one) clones and pushes', async () => {
    const minted = await client(srv.url, srv.token).post(`/v1/projects/${projectId}/cli-token`);
    expect(minted.status).to.equal(201);
    const w = await fresh();
    await w.ok(['clone', '-q', authedUrl(repoUrl, minted.body.token), '.']);
    await w.ok(['checkout', '-q', '-b', 'project-token-branch']);
    await w.commit({ 'p.txt': 'p\n' });
    await w.ok(['push', '-q', 'origin', 'project-token-branch']);
  });

  it("another project's token and another account's user token: 404, as if the repo did not exist", async () => {
    const other = await client(srv.url, srv.token).post('/v1/projects', { name: 'Other', slug: 'other-repo' });
    const otherToken = (await client(srv.url, srv.token).post(`/v1/projects/${other.body.project.project_id}/cli-token`)).body.token;
    const stranger = await srv.newUser('stranger@example.test');
    for (const token of [otherToken, stranger.token]) {
      for (const service of ['git-upload-pack', 'git-receive-pack']) {
        const res = await fetch(`${repoUrl}/info/refs?service=${service}`, { headers: { authorization: basic(token) } });
        expect(res.status).to.equal(404);
        expect(await res.text()).to.not.contain('refs/heads');
      }
      const w = await fresh();
      const r = await w.run(['clone', '-q', authedUrl(repoUrl, token), '.']);
      expect(r.code).to.not.equal(0);
      expect(r.stderr).to.contain('not found');
    }
    const missing = await fetch(`${srv.url}/git/no-such-repo.git/info/refs?service=git-upload-pack`, { headers: { authorization: basic(srv.token) } });
    expect(missing.status).to.equal(404);
  });

  it('an expired or revoked token: 401', async () => {
    const expired = await mintToken(srv.db.db, { userId: srv.userId, projectId, name: 'clone-credential', expiresAt: new Date(Date.now() - 1000) });
    const res = await fetch(`${repoUrl}/info/refs?service=git-upload-pack`, { headers: { authorization: basic(expired.token) } });
    expect(res.status).to.equal(401);
    const live = await mintToken(srv.db.db, { userId: srv.userId, projectId, name: 'clone-credential', expiresAt: new Date(Date.now() + 900_000) });
    // A live clone credential (decision 2: a 15-minute project token, user x-access-token) clones.
    const w = await fresh();
    await w.ok(['clone', '-q', authedUrl(repoUrl, live.token), '.']);
    expect(await w.ok(['log', '--format=%s'])).to.equal('seed');
    await srv.db.db.run({ text: 'UPDATE tokens SET revoked_at = now() WHERE token_id = $1', values: [live.token_id] });
    const revoked = await fetch(`${repoUrl}/info/refs?service=git-upload-pack`, { headers: { authorization: basic(live.token) } });
    expect(revoked.status).to.equal(401);
  });

  it('protocol v2 from the Git-Protocol header, and a gzip request body', async () => {
    const adv = await fetch(`${repoUrl}/info/refs?service=git-upload-pack`, { headers: { authorization: basic(srv.token), 'git-protocol': 'version=2' } });
    expect(adv.status).to.equal(200);
    expect(adv.headers.get('content-type')).to.equal('application/x-git-upload-pack-advertisement');
    expect(await adv.text()).to.match(/^000eversion 2\n/);
    const body = gzipSync(Buffer.from(pkt('command=ls-refs\n') + '0001' + pkt('ref-prefix refs/heads/\n') + '0000'));
    const res = await fetch(`${repoUrl}/git-upload-pack`, {
      method: 'POST',
      headers: { authorization: basic(srv.token), 'git-protocol': 'version=2', 'content-type': 'application/x-git-upload-pack-request', 'content-encoding': 'gzip' },
      body,
    });
    expect(res.status).to.equal(200);
    expect(res.headers.get('content-type')).to.equal('application/x-git-upload-pack-result');
    const text = await res.text();
    expect(text).to.contain('refs/heads/main');
    const main = await gitOk(seed.dir, ['rev-parse', 'HEAD']);
    expect(text).to.contain(main);
  });

  it('a v0 advertisement starts with the service banner', async () => {
    const adv = await fetch(`${repoUrl}/info/refs?service=git-receive-pack`, { headers: { authorization: basic(srv.token) } });
    expect(adv.status).to.equal(200);
    expect(adv.headers.get('content-type')).to.equal('application/x-git-receive-pack-advertisement');
    expect(adv.headers.get('cache-control')).to.contain('no-cache');
    expect(await adv.text()).to.match(/^001f# service=git-receive-pack\n0000/);
  });
});
