import { expect } from 'chai';
import { startTestServer, withProject, type TestServer } from '../../support/server.js';
import { client } from '../../support/http.js';
import { authedUrl, workDir, type WorkDir } from '../../support/git-client.js';
import { CHECKS_ENV, settled } from '../checks/support.js';
import { eventually, projectPath } from './support.js';

const CHECKED = `[[checks]]
name = "test"
run = "sh check.sh"
timeout_minutes = 2
`;

/** The manifest log of a project: each sync with the commit it read and why. */
async function syncs(srv: TestServer, projectId: string): Promise<{ type: string; data: { commit_sha: string | null; reason: string } }[]> {
  return srv.db.db.rows({ text: "SELECT type, data FROM events WHERE stream_id = $1 AND type IN ('ManifestSynced', 'ManifestRejected') ORDER BY stream_position", values: [`manifest-${projectId}`] });
}

describe('the manifest in force follows the default branch wherever it moves', function () {
  this.timeout(120_000);

  describe('a managed repository', () => {
    let srv: TestServer;
    let w: WorkDir;
    before(async () => {
      srv = await startTestServer({ env: CHECKS_ENV });
      w = await workDir();
    });
    after(async () => {
      await w?.cleanup();
      await srv?.stop();
    });

    it('the first push to main carries svc.toml with [[checks]]: a CR opened next gets its check run, with no other step', async () => {
      const api = client(srv.url, srv.token);
      const project = (await api.post('/v1/projects', { name: 'Follow', slug: 'follow' })).body.project;
      await w.ok(['clone', '-q', authedUrl(project.repo_url, srv.token), '.']);
      await w.ok(['checkout', '-q', '-b', 'main']);
      const main = await w.commit({ 'svc.toml': CHECKED, 'check.sh': 'echo checked\n' }, 'first, with checks');
      const pushed = await w.run(['push', '-q', 'origin', 'main']);
      expect(pushed.code, pushed.stderr).to.equal(0);
      // The push alone put it in force (recorded as a sync of that commit, because of a push).
      await eventually(async () => (await syncs(srv, project.project_id)).some((e) => e.data.commit_sha === main), 'the sync of the pushed main');
      const log = await syncs(srv, project.project_id);
      expect(log.filter((e) => e.data.commit_sha === main).map((e) => [e.type, e.data.reason])).to.deep.equal([['ManifestSynced', 'push']]);

      await w.ok(['checkout', '-q', '-b', 'topic']);
      const head = await w.commit({ 'work.txt': 'work\n' }, 'work');
      expect((await w.run(['push', '-q', 'origin', 'topic'])).code).to.equal(0);
      const base = `/v1/projects/${project.project_id}/change-requests`;
      const cr = (await api.post(base, { title: 'work', head_ref: 'topic' })).body.change_request;
      const p = { api, base } as Parameters<typeof settled>[0];
      const run = await settled(p, cr.number, 'test', { base: main, head });
      expect(run.status).to.equal('passed');
      // Reads of the CR saw main at the same tip: nothing synced twice.
      expect((await syncs(srv, project.project_id)).filter((e) => e.data.commit_sha === main)).to.have.length(1);
    });
  });

  it('a file:// repository whose main moves outside svc: the next read syncs that tip, once', () =>
    withProject({ slug: 'follow-outside', env: CHECKS_ENV }, async (p) => {
      const projectId = (await p.api.get(projectPath(p))).body.project.project_id as string;
      // In force before the move (the first read syncs a project never synced).
      await p.api.get(`${projectPath(p)}/manifest`);
      const moved = await p.repo.commit('main', { 'svc.toml': CHECKED, 'check.sh': 'true\n' });
      await p.repo.commit('topic', { 'x.txt': 'x\n' });
      const cr = (await p.api.post(p.base, { title: 'x', head_ref: 'topic' })).body.change_request;
      for (let i = 0; i < 5; i++) await p.api.get(`${p.base}/${cr.number}`);
      const view = await eventually(async () => {
        const m = (await p.api.get(`${projectPath(p)}/manifest`)).body;
        return m.source_sha === moved ? m : null;
      }, 'the manifest read at the moved tip');
      expect(view.manifest.checks.map((c: { name: string }) => c.name)).to.deep.equal(['test']);
      const log = await syncs(p.srv, projectId);
      expect(log.filter((e) => e.data.commit_sha === moved).map((e) => e.data.reason)).to.deep.equal(['moved outside']);
    }));
});
