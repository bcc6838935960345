import { expect } from 'chai';
import { withProject } from '../../support/server.js';

/**
 * The server honours SVC_GIT_ENGINE, and both engines give the API the same answers for
 * the same repository: preview, diff, conflict and merge commit shape.
 */
describe('the API on each git engine', function () {
  this.timeout(90_000);
  for (const engine of ['git', 'libgit2'] as const) {
    it(`previews, diffs, refuses a conflict and merges with SVC_GIT_ENGINE=${engine}`, () =>
      withProject({ slug: `eng-${engine}`, env: { SVC_GIT_ENGINE: engine } }, async ({ api, repo, base }) => {
        await repo.commit('main', { 'main.txt': 'm\n', 'clash.txt': 'main\n' });
        const head = await repo.commit('topic', { 'topic.txt': 't\n', 'README.md': 'fixture\nmore\n' }, { from: 'main~1' });
        await repo.commit('clash', { 'clash.txt': 'topic\n' }, { from: 'main~1' });
        const cr = (await api.post(base, { title: 'Topic', head_ref: 'topic' })).body.change_request;
        const bad = (await api.post(base, { title: 'Clash', head_ref: 'clash' })).body.change_request;

        const preview = (await api.get(`${base}/${cr.number}/merge-preview`)).body;
        expect(preview).to.include({ can_merge: true, can_fast_forward: false, is_up_to_date: false });
        const diff = (await api.get(`${base}/${cr.number}/diff`)).body;
        expect(diff.files.map((f: { path: string; status: string }) => `${f.status} ${f.path}`).sort()).to.deep.equal([
          'added topic.txt',
          'modified README.md',
        ]);
        expect([diff.additions, diff.deletions]).to.deep.equal([2, 0]);

        const conflict = await api.post(`${base}/${bad.number}/merge`, {});
        expect(conflict.status).to.equal(409);
        expect(conflict.body.conflicts).to.deep.equal(['clash.txt']);

        const mainBefore = repo.tip('main');
        const merged = (await api.post(`${base}/${cr.number}/merge`, {})).body.change_request;
        repo.git('fetch', '-q', 'origin');
        expect(repo.git('log', '-1', '--format=%P %an <%ae>', merged.merge_commit_sha)).to.equal(`${mainBefore} ${head} svc <noreply@svc.local>`);
        expect(repo.git('show', `${merged.merge_commit_sha}:topic.txt`)).to.equal('t');
      }));
  }
});
