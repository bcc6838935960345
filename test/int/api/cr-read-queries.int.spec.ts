import { expect } from 'chai';
import { countedCrServer, idleUpkeep, type StatementLog } from '../../support/counting-db.js';
import { client } from '../../support/http.js';
import type { FixtureRepo } from '../../support/repo.js';
import type { TestServer } from '../../support/server.js';

/**
 * What `GET` of an open CR (live refresh: both tips re-read) costs the database when its
 * tips did not move (docs/speed.md "One authentication path"): one statement, the one every
 * project-scoped request authenticates with (`requireAuth`): the token (with the sandbox its
 * credential belongs to, for the gateway rule) and the project the path names with the
 * caller's membership, which for this read also joins the CR by number, served once the
 * access rule gave the caller the project. Other project routes: the same statement without
 * the CR, then their own.
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

  it('one statement: the token (its sandbox read with it), the project with the membership and the CR; a moved tip is still seen', async () => {
    const api = client(srv.url, srv.token);
    await api.get(path); // the first read may record a refresh and touch the token
    for (const p of [path, byUuid]) {
      await api.get(p);
      log.reset();
      const r = await api.get(p);
      expect(r.status).to.equal(200);
      const statements = log.except(background);
      const summary = statements.map((t) => t.replace(/\s+/g, ' ').slice(0, 100)).join('\n');
      expect(statements, `${p}:\n${summary}`).to.have.length(1);
      const one = statements[0]!.replace(/\s+/g, ' ');
      expect(one, 'the token').to.match(/token_hash = \$1/);
      expect(one, "the credential's sandbox is read with the token").to.match(/cli_token_id/);
      expect(one, 'the project with the membership').to.match(/\bmemberships m\b/).and.match(/\bprojects [po]\b/);
      expect(one, 'the CR by number').to.match(/change_requests c ON c\.project_id = p\.project_id AND c\.number = \$3/);
    }
    // Another project route: the same authentication without the CR, then its own read.
    log.reset();
    expect((await api.get(`${byUuid}/events`)).status).to.equal(200);
    const events = log.except(background).map((t) => t.replace(/\s+/g, ' '));
    expect(events[0], events.join('\n')).to.match(/token_hash = \$1/).and.match(/\bprojects p\b/).and.not.match(/change_requests c/);
    expect(events.filter((t) => /token_hash = \$1|\bmemberships\b/.test(t)), 'no second lookup of the token or the membership').to.have.length(1);
    // Live: a push is seen by the next read (which then records the refresh).
    const pushed = await repo.commit('topic', { 'a.txt': 'two\n' });
    expect((await api.get(path)).body.change_request.head_commit_sha).to.equal(pushed);
  });
});
