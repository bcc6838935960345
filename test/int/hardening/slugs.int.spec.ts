import { expect } from 'chai';
import { serverAndRepo } from '../../support/suite.js';
import { client } from '../../support/http.js';

describe('project slugs per account and foreign projects answer 404', function () {
  this.timeout(90_000);
  const fx = serverAndRepo();

  it('23 projects of one name in each of two accounts: no 500, each account its own slugs', async () => {
    const alice = client(fx.srv.url, fx.srv.token);
    const bobUser = await fx.srv.newUser('bob@example.test');
    const bob = client(fx.srv.url, bobUser.token);
    const created: Record<string, string[]> = { alice: [], bob: [] };
    for (let i = 0; i < 23; i++) {
      for (const [who, api] of [['alice', alice], ['bob', bob]] as const) {
        const r = await api.post('/v1/projects', { name: 'Web App', repo_url: fx.repo.url });
        expect(r.status, JSON.stringify(r.body)).to.equal(201);
        created[who]!.push(r.body.project.slug);
      }
    }
    const expected = ['web-app', ...Array.from({ length: 22 }, (_, i) => `web-app-${i + 2}`)];
    expect(created.alice).to.deep.equal(expected);
    expect(created.bob).to.deep.equal(expected);

    // A slug resolves within the caller's accounts.
    const a = (await alice.get('/v1/projects/web-app-7')).body.project;
    const b = (await bob.get('/v1/projects/web-app-7')).body.project;
    expect(a.account_id).to.equal(fx.srv.accountId);
    expect(b.account_id).to.equal(bobUser.accountId);
    expect(a.project_id).to.not.equal(b.project_id);

    // Another account's project answers exactly like a missing one.
    const foreign = await alice.get(`/v1/projects/${b.project_id}`);
    const missing = await alice.get('/v1/projects/00000000-0000-4000-8000-000000000000');
    expect(foreign.status).to.equal(404);
    expect(foreign.body).to.deep.equal(missing.body);
    expect((await alice.get(`/v1/projects/${b.project_id}/change-requests`)).status).to.equal(404);
    expect((await alice.get('/v1/projects/no-such-slug')).status).to.equal(404);

    // A requested slug that is taken: 409 naming it; the same slug in another account is fine.
    const taken = await alice.post('/v1/projects', { name: 'x', slug: 'web-app-3', repo_url: fx.repo.url });
    expect(taken.status).to.equal(409);
    expect(taken.body.slug).to.equal('web-app-3');
    expect(taken.body.message).to.include("'web-app-3'");
    const carol = client(fx.srv.url, (await fx.srv.newUser('carol@example.test')).token);
    expect((await carol.post('/v1/projects', { name: 'x', slug: 'web-app-3', repo_url: fx.repo.url })).status).to.equal(201);
  });

  it('concurrent creates of one name in one account all succeed with distinct slugs', async () => {
    const api = client(fx.srv.url, fx.srv.token);
    const rs = await Promise.all(Array.from({ length: 8 }, () => api.post('/v1/projects', { name: 'Race', repo_url: fx.repo.url })));
    const statuses = rs.map((r) => r.status);
    expect(statuses.every((s) => s === 201 || s === 409), JSON.stringify(statuses)).to.equal(true);
    const slugs = rs.filter((r) => r.status === 201).map((r) => r.body.project.slug);
    expect(new Set(slugs).size).to.equal(slugs.length);
  });
});
