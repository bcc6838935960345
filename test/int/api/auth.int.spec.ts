import { expect } from 'chai';
import { createHash, randomBytes } from 'node:crypto';
import { serverAndRepo } from '../../support/suite.js';
import { client } from '../../support/http.js';

/** Every route × every kind of caller that must be turned away. */
describe('auth matrix', function () {
  this.timeout(60_000);
  const fx = serverAndRepo();
  let projectId: string;
  let otherProjectId: string;
  let tokens: Record<string, string | undefined>;

  before(async () => {
    await fx.repo.commit('feature', { 'f.txt': 'f\n' });
    const owner = client(fx.srv.url, fx.srv.token);
    projectId = (await owner.post('/v1/projects', { name: 'Mine', repo_url: fx.repo.url })).body.project.project_id;
    otherProjectId = (await owner.post('/v1/projects', { name: 'Other', repo_url: fx.repo.url })).body.project.project_id;
    await owner.post(`/v1/projects/${projectId}/change-requests`, { title: 'T', head_ref: 'feature' });
    const stranger = await fx.srv.newUser('stranger@example.test');
    const otherProjectToken = (await owner.post(`/v1/projects/${otherProjectId}/cli-token`)).body.token;
    tokens = {
      none: undefined,
      malformed: 'not-a-token',
      unknown: `svc_pat_${randomBytes(32).toString('base64url')}`,
      sandboxKey: randomBytes(32).toString('hex'), // SVC_TOKEN: a service key, not a PAT
      nonMember: stranger.token,
      otherProject: otherProjectToken,
    };
  });

  const projectRoutes = (p: string): [string, string, unknown?][] => [
    ['GET', `/v1/projects/${p}`],
    ['POST', `/v1/projects/${p}/cli-token`],
    ['GET', `/v1/projects/${p}/change-requests`],
    ['POST', `/v1/projects/${p}/change-requests`, { title: 'x', head_ref: 'feature' }],
    ['GET', `/v1/projects/${p}/change-requests/1`],
    ['PATCH', `/v1/projects/${p}/change-requests/1`, { title: 'y' }],
    ['GET', `/v1/projects/${p}/change-requests/1/diff`],
    ['GET', `/v1/projects/${p}/change-requests/1/merge-preview`],
    ['GET', `/v1/projects/${p}/change-requests/1/events`],
    ['POST', `/v1/projects/${p}/change-requests/1/merge`, {}],
    ['POST', `/v1/projects/${p}/change-requests/1/close`],
    ['POST', `/v1/projects/${p}/change-requests/1/reopen`],
  ];

  it('401 for a missing, malformed, unknown token or the sandbox service key, on every route', async () => {
    const routes: [string, string, unknown?][] = [
      ...projectRoutes('x'),
      ['GET', '/v1/projects'],
      ['POST', '/v1/projects', { name: 'n', repo_url: fx.repo.url }],
      ['GET', '/v1/accounts/me'],
      ['POST', '/v1/accounts/tokens', {}],
    ];
    for (const kind of ['none', 'malformed', 'unknown', 'sandboxKey']) {
      const api = client(fx.srv.url, tokens[kind]);
      for (const [method, path, body] of routes) {
        const res = await api.call(method, path.replace('/x', `/${projectId}`), body);
        expect(res.status, `${kind} ${method} ${path}`).to.equal(401);
        expect(res.body).to.include({ error: 'Unauthorized' });
      }
    }
  });

  it('404 for a user token outside the account (like a missing project), 403 for a project token of another project', async () => {
    for (const [kind, status, error] of [['nonMember', 404, 'Not found'], ['otherProject', 403, 'Forbidden']] as const) {
      const api = client(fx.srv.url, tokens[kind]);
      for (const [method, path, body] of projectRoutes(projectId)) {
        const res = await api.call(method, path, body);
        expect(res.status, `${kind} ${method} ${path}`).to.equal(status);
        expect(res.body.error).to.equal(error);
      }
    }
  });

  it('403 for project tokens on account routes and on project creation', async () => {
    const api = client(fx.srv.url, tokens.otherProject);
    expect((await api.get('/v1/accounts/me')).status).to.equal(403);
    expect((await api.post('/v1/accounts/tokens', {})).status).to.equal(403);
    expect((await api.post('/v1/projects', { name: 'n', repo_url: fx.repo.url })).status).to.equal(403);
  });

  it('lets a project token read and write its own project (by uuid or slug) and list only it', async () => {
    const owner = client(fx.srv.url, fx.srv.token);
    const minted = await owner.post(`/v1/projects/${projectId}/cli-token`);
    expect(minted.status).to.equal(201);
    expect(minted.body.token).to.match(/^svc_pat_/);
    expect(minted.body.project_id).to.equal(projectId);
    const api = client(fx.srv.url, minted.body.token);
    const list = await api.get('/v1/projects');
    expect(list.body.projects.map((p: { project_id: string }) => p.project_id)).to.deep.equal([projectId]);
    expect((await api.get('/v1/projects/mine')).status).to.equal(200);
    expect((await api.get('/v1/projects/other')).status).to.equal(403);
    const created = await api.post(`/v1/projects/${projectId}/change-requests`, { title: 'From sandbox', head_ref: 'feature' });
    expect(created.status).to.equal(201);
    expect(created.body.change_request.created_by, 'acts as the launching user').to.equal(fx.srv.userId);
  });

  it('user tokens see account routes; minted tokens are shown once and work', async () => {
    const owner = client(fx.srv.url, fx.srv.token);
    const me = await owner.get('/v1/accounts/me');
    expect(me.status).to.equal(200);
    expect(me.body.user).to.include({ user_id: fx.srv.userId, email: 'owner@example.test' });
    expect(me.body.account.account_id).to.equal(fx.srv.accountId);
    const t = await owner.post('/v1/accounts/tokens', { name: 'laptop' });
    expect(t.status).to.equal(201);
    expect(t.body).to.include({ name: 'laptop' });
    expect((await client(fx.srv.url, t.body.token).get('/v1/accounts/me')).status).to.equal(200);
    // At rest: exactly the sha256 of the token shown once, 32 bytes, and nothing that decodes to the token.
    const stored = await fx.srv.db.db.rows<{ token_hash: Buffer; name: string }>({ text: 'SELECT token_hash, name FROM tokens', values: [] });
    const laptop = stored.filter((r) => r.name === 'laptop');
    expect(laptop, 'one row for the minted token').to.have.length(1);
    expect(laptop[0]!.token_hash.equals(createHash('sha256').update(t.body.token, 'utf8').digest()), 'sha256 of the token').to.equal(true);
    expect(stored.every((r) => r.token_hash.length === 32), 'only 32-byte digests at rest').to.equal(true);
  });

  it('404 for an unknown project inside a user token’s scope', async () => {
    const res = await client(fx.srv.url, fx.srv.token).get('/v1/projects/does-not-exist/change-requests');
    expect(res.status).to.equal(404);
  });
});
