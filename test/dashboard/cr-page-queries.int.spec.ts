import { expect } from 'chai';
import { countedCrServer, idleUpkeep, type StatementLog } from '../support/counting-db.js';
import { client } from '../support/http.js';
import type { FixtureRepo } from '../support/repo.js';
import type { TestServer } from '../support/server.js';
import { dashFetch, signInHttp, withPassword } from './support.js';
import { until } from '../support/wait.js';

/**
 * What one render of the CR page costs the database. The server runs on a counting Db
 * (every statement its code sends, BEGIN/COMMIT included); the render is counted from its
 * request to its response. Background work of the idle server (the queue's claim upkeep
 * in `job_claims` and the transactions it runs in; pg-boss is on its own connections) is
 * not the page's and is left out.
 */
describe('dashboard CR page: SQL statements per render', function () {
  this.timeout(60_000);
  let srv: TestServer;
  let repo: FixtureRepo;
  let log: StatementLog;
  let cookie: string;
  let page: string;

  before(async () => {
    const c = await countedCrServer('counted', { 'a.txt': 'one\ntwo\n', 'b.txt': 'three\n' }, 'Counted');
    ({ srv, repo, log } = c);
    await withPassword(srv);
    cookie = await signInHttp(srv.url);
    page = `/projects/${c.projectId}/change-requests/${c.crNumber}`;
  });
  after(async () => {
    await srv?.stop();
    await repo?.cleanup();
  });

  const background = idleUpkeep;

  async function render(): Promise<string[]> {
    log.reset();
    const r = await dashFetch(srv.url, cookie, page);
    expect(r.status).to.equal(200);
    expect(r.text).to.contain('Counted').and.contain('a.txt').and.contain('Clean:');
    return log.except(background);
  }

  it('an open CR with its diff, merge preview and history takes at most 6 statements and no call to the API', async () => {
    await render(); // the first read may record a refresh; the steady state is what a reader pays
    const statements = await render();
    const summary = statements.map((t) => t.replace(/\s+/g, ' ').slice(0, 90));
    // Every API call authenticated a bearer token first: none may be left.
    expect(statements.filter((t) => /token_hash = \$1/.test(t)), summary.join('\n')).to.have.length(0);
    expect(statements.length, summary.join('\n')).to.be.at.most(6);
  });

  it('a page load marks the browser\'s sign-in token used (at most once a minute), in the session\'s own touch', async () => {
    const signIn = async () =>
      ((await client(srv.url, srv.token).get('/v1/accounts/tokens')).body.tokens as Array<{ name: string; last_used_at: string | null }>)
        .find((t) => t.name === 'dashboard sign-in')!;
    // A minute on: the session was last seen long enough ago for the touch to write.
    await srv.db.db.run({ text: "UPDATE dashboard_sessions SET last_seen_at = now() - interval '2 minutes'", values: [] });
    await srv.db.db.run({ text: "UPDATE tokens SET last_used_at = NULL WHERE name = 'dashboard sign-in'", values: [] });
    const statements = await render();
    // The page's six, plus the touch itself: one statement, at most once a minute.
    expect(statements.filter((t) => /UPDATE dashboard_sessions SET last_seen_at/.test(t)), statements.join('\n')).to.have.length(1);
    expect(statements.length, statements.join('\n')).to.be.at.most(7);
    await until(async () => (await signIn()).last_used_at !== null, 'the sign-in token marked used');
  });
});
