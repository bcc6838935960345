import { expect } from 'chai';
import { execFileSync } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, symlink, unlink } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { mintToken } from '../../../services/tokens/service.js';
import { client } from '../../support/http.js';
import { fixtureRepo, type FixtureRepo } from '../../support/repo.js';
import { startTestServer, type TestServer } from '../../support/server.js';

/**
 * Every project-scoped route reads the token and the project it names in one statement
 * (`requireAuth`, api/auth.ts; the rule applied by `resolveProject`): `GET` of a CR, the
 * read this was made fast for, and the project's other routes keep every rule of the
 * access path, and nothing is cached, so a change is seen by the very next read.
 */
describe('project-scoped reads (token and project in one statement): the same rules, nothing stale', function () {
  this.timeout(60_000);
  let srv: TestServer;
  let repo: FixtureRepo;
  let projectId: string;
  const crPath = (project: string, n: number | string = 1) => `/v1/projects/${project}/change-requests/${n}`;

  before(async () => {
    srv = await startTestServer({ env: { SVC_SCHEDULER: '0', SVC_APPS: '0', SVC_CHANNELS_DISPATCH: '0' } });
    repo = await fixtureRepo();
    const owner = client(srv.url, srv.token);
    projectId = (await owner.post('/v1/projects', { name: 'Read', slug: 'read', repo_url: repo.url })).body.project.project_id;
    await repo.commit('topic', { 'a.txt': 'one\n' });
    expect((await owner.post(`/v1/projects/${projectId}/change-requests`, { title: 'Read', head_ref: 'topic' })).status).to.equal(201);
  });
  after(async () => {
    await srv?.stop();
    await repo?.cleanup();
  });

  it('answers by project uuid (any case) or slug, by number or #number; an unknown number is 404', async () => {
    const api = client(srv.url, srv.token);
    for (const p of [projectId, projectId.toUpperCase(), 'read']) {
      const r = await api.get(crPath(p));
      expect(r.status, p).to.equal(200);
      expect(r.body.change_request).to.include({ project_id: projectId, number: 1, status: 'open' });
    }
    expect((await api.get(crPath(projectId, '%231'))).body.change_request.number).to.equal(1);
    const missing = await api.get(crPath(projectId, 99));
    expect(missing.status).to.equal(404);
    expect(missing.body.message).to.match(/Change request/);
    // The CR by uuid, and as_of.
    const cr = (await api.get(crPath(projectId))).body.change_request;
    expect((await api.get(crPath(projectId, cr.cr_id))).body.change_request.number).to.equal(1);
    expect((await api.get(`${crPath(projectId)}?as_of=${encodeURIComponent(new Date().toISOString())}`)).status).to.equal(200);
  });

  it('a revoked or expired token is refused on the very next read', async () => {
    const owner = client(srv.url, srv.token);
    const made = await owner.post('/v1/accounts/tokens', { name: 'reader' });
    const reader = client(srv.url, made.body.token);
    expect((await reader.get(crPath(projectId))).status).to.equal(200);
    expect((await owner.call('DELETE', `/v1/accounts/tokens/${made.body.token_id}`)).status).to.equal(204);
    expect((await reader.get(crPath(projectId))).status).to.equal(401);
    expect((await reader.get(`/v1/projects/${projectId}`)).status).to.equal(401);

    const other = await owner.post('/v1/accounts/tokens', { name: 'expiring' });
    expect((await client(srv.url, other.body.token).get(crPath('read'))).status).to.equal(200);
    await srv.db.db.run({ text: `UPDATE tokens SET expires_at = now() - interval '1 second' WHERE token_id = $1`, values: [other.body.token_id] });
    expect((await client(srv.url, other.body.token).get(crPath('read'))).status).to.equal(401);
  });

  it("another account's project is 404 like a missing one, by uuid or slug; a slug resolves within the caller's own accounts", async () => {
    const stranger = await srv.newUser('stranger-read@example.test');
    const api = client(srv.url, stranger.token);
    for (const p of [projectId, 'read', randomUUID(), '%72ead']) {
      for (const url of [crPath(p), `/v1/projects/${p}`, `/v1/projects/${p}/change-requests`]) {
        const r = await api.get(url);
        expect(r.status, url).to.equal(404);
        expect(r.body.message).to.match(/Project/);
      }
    }
    // The stranger's own project with the same slug is theirs to read, never ours.
    const mine = (await api.post('/v1/projects', { name: 'Read', slug: 'read', repo_url: repo.url })).body.project.project_id;
    expect(mine).to.not.equal(projectId);
    expect((await api.get(crPath('read'))).body.message).to.match(/Change request/);
    expect((await api.post(`/v1/projects/${mine}/change-requests`, { title: 'Theirs', head_ref: 'topic' })).status).to.equal(201);
    expect((await api.get(crPath('read'))).body.change_request).to.include({ project_id: mine, title: 'Theirs' });
    expect((await client(srv.url, srv.token).get(crPath('read'))).body.change_request).to.include({ project_id: projectId, title: 'Read' });
  });

  it('a member removed from the account loses the read at once: their user token 404, their project token 403', async () => {
    const member = await srv.newUser('member-read@example.test');
    await srv.db.db.run({ text: 'INSERT INTO memberships (account_id, user_id) VALUES ($1, $2)', values: [srv.accountId, member.userId] });
    const asUser = client(srv.url, member.token);
    const projectToken = (await asUser.post(`/v1/projects/${projectId}/cli-token`)).body.token as string;
    const asProject = client(srv.url, projectToken);
    expect((await asUser.get(crPath(projectId))).status).to.equal(200);
    expect((await asProject.get(crPath('read'))).status).to.equal(200);
    await srv.db.db.run({ text: 'DELETE FROM memberships WHERE account_id = $1 AND user_id = $2', values: [srv.accountId, member.userId] });
    expect((await asUser.get(crPath(projectId))).status).to.equal(404);
    const r = await asProject.get(crPath(projectId));
    expect(r.status).to.equal(403);
    expect(r.body.message).to.match(/write access/);
    expect((await asProject.get(crPath('read'))).status).to.equal(403);
    // Every project-scoped route, not only the CR read.
    for (const p of [`/v1/projects/${projectId}`, `/v1/projects/read/change-requests`, `/v1/projects/${projectId}/channels`]) {
      expect((await asUser.get(p)).status, p).to.equal(404);
      expect((await asProject.get(p)).status, p).to.equal(403);
    }
  });

  it("a project token reads only its own project's CRs (403 for another project, by uuid or slug, even an unknown one)", async () => {
    const owner = client(srv.url, srv.token);
    const otherId = (await owner.post('/v1/projects', { name: 'Other', slug: 'other-read', repo_url: repo.url })).body.project.project_id;
    expect((await owner.post(`/v1/projects/${otherId}/change-requests`, { title: 'Other', head_ref: 'topic' })).status).to.equal(201);
    const own = client(srv.url, (await owner.post(`/v1/projects/${projectId}/cli-token`)).body.token);
    expect((await own.get(crPath(projectId))).body.change_request.project_id).to.equal(projectId);
    for (const p of [otherId, 'other-read', randomUUID(), 'no-such-slug', encodeURIComponent('other-read')]) {
      for (const url of [crPath(p), `/v1/projects/${p}`, `/v1/projects/${p}/change-requests`]) {
        const r = await own.get(url);
        expect(r.status, url).to.equal(403);
        expect(r.body.message).to.match(/another project/);
      }
    }
  });

  it("a sandbox's agent token reads its project only through its gateway: on the public listener it is 401", async () => {
    const { token } = await mintToken(srv.db.db, { userId: srv.userId, projectId, name: 'agent', agent: { sandboxId: randomUUID() } });
    const r = await client(srv.url, token).get(crPath(projectId));
    expect(r.status).to.equal(401);
    expect(r.body.message).to.match(/gateway/);
  });

  it("a file:// repository re-pointed into the data dir is refused on the very next read (its stored tips served), and read again once it points back", async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), 'svc-cr-read-link-'));
    const link = path.join(dir, 'repo.git');
    const evil = path.join(srv.dataDir, 'evil.git');
    try {
      await symlink(repo.bare, link);
      const owner = client(srv.url, srv.token);
      const linked = (await owner.post('/v1/projects', { name: 'Linked', repo_url: `file://${link}` })).body.project.project_id;
      const opened = (await owner.post(`/v1/projects/${linked}/change-requests`, { title: 'Linked', head_ref: 'topic' })).body.change_request;
      const before = opened.head_commit_sha as string;
      // A copy inside the server's data directory whose topic points elsewhere.
      execFileSync('git', ['clone', '-q', '--bare', repo.bare, evil]);
      execFileSync('git', ['--git-dir', evil, 'update-ref', 'refs/heads/topic', repo.tip('main')!]);
      await unlink(link);
      await symlink(evil, link);
      const r = await owner.get(crPath(linked));
      expect(r.status).to.equal(200);
      expect(r.body.change_request.head_commit_sha, 'the data dir is never read').to.equal(before);
      await unlink(link);
      await symlink(repo.bare, link);
      const pushed = await repo.commit('topic', { 'linked.txt': 'x\n' });
      expect((await owner.get(crPath(linked))).body.change_request.head_commit_sha).to.equal(pushed);
    } finally {
      await rm(dir, { recursive: true, force: true });
      await rm(evil, { recursive: true, force: true });
    }
  });

  it('failed reads count toward the failure limit like any other route', async () => {
    const limited = await startTestServer({ env: { SVC_SCHEDULER: '0', SVC_APPS: '0', SVC_CHANNELS_DISPATCH: '0', SVC_AUTH_FAILURE_LIMIT: '3', SVC_AUTH_FAILURE_WINDOW_S: '60' } });
    try {
      const statuses: number[] = [];
      for (let i = 0; i < 5; i++) statuses.push((await client(limited.url, `svc_pat_${'y'.repeat(30)}${i}`).get(crPath(randomUUID()))).status);
      expect(statuses).to.deep.equal([401, 401, 401, 429, 429]);
    } finally {
      await limited.stop();
    }
  });
});
