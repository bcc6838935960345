import { expect } from 'chai';
import { countedCrServer, idleUpkeep, type StatementLog } from '../../support/counting-db.js';
import { client } from '../../support/http.js';
import type { FixtureRepo } from '../../support/repo.js';
import type { TestServer } from '../../support/server.js';

/**
 * What `GET` of an open CR (live refresh: both tips re-read) costs the database when its
 * tips did not move (docs/speed.md): two statements. The first is every project-scoped
 * request's authentication (`requireAuth`): the token (with the sandbox its credential
 * belongs to, for the gateway rule) and the project the path names with the caller's
 * membership; the second the CR row. It was three round trips on the path every route
 * takes, and one on a second path for this read alone.
 */
describe('GET of an open CR: SQL statements per read', function () {
  this.timeout(60_000);
  let srv: TestServer;
  let repo: FixtureRepo;
  let log: StatementLog;
  let path: string;
  let byUuid: string;

  before(async () => {
    const c = await countedCrServer('read', { 'a.txt': 'one\n' });
    ({ srv, repo, log } = c);
    path = `/v1/projects/read/change-requests/${c.crNumber}`;
    byUuid = `/v1/projects/${c.projectId}/change-requests/${c.crNumber}`;
  });
  after(async () => {
    await srv?.stop();
    await repo?.cleanup();
  });

  const background = idleUpkeep;

  it('two statements: the token (its sandbox read with it) with the project, then the CR; a moved tip is still seen', async () => {
    const api = client(srv.url, srv.token);
    await api.get(path); // the first read may record a refresh and touch the token
    for (const p of [path, byUuid]) {
      await api.get(p);
      log.reset();
      const r = await api.get(p);
      expect(r.status).to.equal(200);
      const statements = log.except(background);
      const summary = statements.map((t) => t.replace(/\s+/g, ' ').slice(0, 100)).join('\n');
      expect(statements, `${p}:\n${summary}`).to.have.length(2);
      const [auth, cr] = statements.map((t) => t.replace(/\s+/g, ' ')) as [string, string];
      expect(auth, 'the token').to.match(/token_hash = \$1/);
      expect(auth, "the credential's sandbox is read with the token").to.match(/cli_token_id/);
      expect(auth, 'the project with the membership').to.match(/\bmemberships m\b/).and.match(/\bprojects [po]\b/);
      expect(cr, 'the CR by number').to.match(/FROM change_requests c WHERE c\.project_id = \$1 AND c\.number = \$2/);
    }
    // Live: a push is seen by the next read (which then records the refresh).
    const pushed = await repo.commit('topic', { 'a.txt': 'two\n' });
    expect((await api.get(path)).body.change_request.head_commit_sha).to.equal(pushed);
  });
});
