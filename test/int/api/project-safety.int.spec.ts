import { expect } from 'chai';
import path from 'node:path';
import { startTestServer } from '../../support/server.js';
import { fixtureRepo } from '../../support/repo.js';
import { client } from '../../support/http.js';

describe('project safety', function () {
  this.timeout(60_000);

  it('refuses file:// repositories unless the operator allows them, and never inside the data dir', async () => {
    const closed = await startTestServer({ env: { SVC_ALLOW_FILE_REPOS: '0' } });
    const open = await startTestServer();
    const repo = await fixtureRepo();
    try {
      const refused = await client(closed.url, closed.token).post('/v1/projects', { name: 'Local', repo_url: repo.url });
      expect(refused.status).to.equal(400);
      expect(refused.body.message).to.match(/SVC_ALLOW_FILE_REPOS/);
      const api = client(open.url, open.token);
      expect((await api.post('/v1/projects', { name: 'Local', repo_url: repo.url })).status).to.equal(201);
      const inside = `file://${path.join(open.dataDir, 'mirrors', 'someone-else.git')}`;
      const sneaky = await api.post('/v1/projects', { name: 'Sneaky', repo_url: inside });
      expect(sneaky.status).to.equal(400);
      expect(sneaky.body.message).to.match(/data directory/);
    } finally {
      await closed.stop();
      await open.stop();
      await repo.cleanup();
    }
  });

  it('a user removed from the account loses their project tokens; project tokens cannot mint tokens', async () => {
    const srv = await startTestServer();
    const repo = await fixtureRepo();
    try {
      const owner = client(srv.url, srv.token);
      const projectId = (await owner.post('/v1/projects', { name: 'Team', repo_url: repo.url })).body.project.project_id;
      const member = await srv.newUser('member@example.test');
      await srv.db.db.run({ text: `INSERT INTO memberships (account_id, user_id) VALUES ($1, $2)`, values: [srv.accountId, member.userId] });
      const memberToken = (await client(srv.url, member.token).post(`/v1/projects/${projectId}/cli-token`)).body.token as string;
      const asSandbox = client(srv.url, memberToken);
      expect((await asSandbox.get(`/v1/projects/${projectId}/change-requests`)).status).to.equal(200);
      expect((await asSandbox.post(`/v1/projects/${projectId}/cli-token`)).status).to.equal(403);
      await srv.db.db.run({ text: `DELETE FROM memberships WHERE account_id = $1 AND user_id = $2`, values: [srv.accountId, member.userId] });
      expect((await asSandbox.get(`/v1/projects/${projectId}/change-requests`)).status).to.equal(403);
    } finally {
      await srv.stop();
      await repo.cleanup();
    }
  });
});
