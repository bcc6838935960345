import { expect } from 'chai';
import { countedCrServer, type StatementLog } from '../../support/counting-db.js';
import { client } from '../../support/http.js';
import type { FixtureRepo } from '../../support/repo.js';
import type { TestServer } from '../../support/server.js';

/**
 * What `GET` of an open CR (live refresh: both tips re-read) costs the database when its
 * tips did not move (issue 24 item 8, docs/speed.md): one statement, the token (with the
 * sandbox its credential belongs to, for the gateway rule), the project with the caller's
 * membership and the CR row read together (services/change-requests/read.ts); it was
 * three round trips the read waited for in turn.
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

  // The idle server's own upkeep: job claims, pg-boss, the sandbox pool's refill check.
  const background = (text: string) => /\bjob_claims\b|\bpgboss\b|\bpool_sandboxes\b/.test(text);

  it('one statement: the token (its sandbox read with it), the project and the CR; a moved tip is still seen', async () => {
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
      expect(one, 'the project with the membership').to.match(/\bmemberships m\b/);
      expect(one, 'the CR by number').to.match(/change_requests c ON c\.project_id = p\.project_id AND c\.number = \$3/);
    }
    // Live: a push is seen by the next read (which then records the refresh).
    const pushed = await repo.commit('topic', { 'a.txt': 'two\n' });
    expect((await api.get(path)).body.change_request.head_commit_sha).to.equal(pushed);
  });
});
