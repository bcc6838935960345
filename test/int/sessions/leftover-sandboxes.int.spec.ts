import { expect } from 'chai';
import { client } from '../../support/http.js';
import { sandboxesUnder, sweepTestSandboxes } from '../../support/leftovers.js';
import { fixtureRepo } from '../../support/repo.js';
import { startTestServer } from '../../support/server.js';
import { fakeRuntime, waitForStatus } from '../../support/sessions.js';

/**
 * Tests leave nothing running: sandboxes run detached (they outlive a server crash), so a
 * test server that stops leaves its sandboxes behind; the root hook's sweep
 * (test/support/fixtures.ts) finds and kills them.
 */
describe('test support: the sandboxes a stopped test server left behind are swept', function () {
  this.timeout(120_000);

  it('a server stopped with a running session leaves its sandbox; the sweep kills it and finds nothing after', async () => {
    const srv = await startTestServer({ env: { SVC_AGENT_RUNTIME: fakeRuntime } });
    const repo = await fixtureRepo();
    let stopped = false;
    try {
      const api = client(srv.url, srv.token);
      expect((await api.post('/v1/projects', { name: 'left', slug: 'left', repo_url: repo.url })).status).to.equal(201);
      const id = (await api.post('/v1/projects/left/sessions', {})).body.session.session_id as string;
      await waitForStatus(api, `/v1/projects/left/sessions/${id}`, ['running'], 60_000);
      await srv.stop();
      stopped = true;
      const left = await sandboxesUnder(srv.dataDir);
      expect(left.length, 'the stopped server left its sandbox running').to.be.greaterThan(0);
      await sweepTestSandboxes();
      expect(await sandboxesUnder(srv.dataDir)).to.deep.equal([]);
    } finally {
      if (!stopped) await srv.stop();
      await repo.cleanup();
    }
  });
});
