import { expect } from 'chai';
import { withProject } from '../../support/server.js';
import { blackHole } from '../../support/blackhole.js';

describe('read budget: a black-holed remote never holds a read', function () {
  this.timeout(60_000);

  it('GET of an open CR serves the stored CR within SVC_REFRESH_TIMEOUT_MS; diff and preview answer 504', () =>
    withProject({ slug: 'budget', env: { SVC_REFRESH_TIMEOUT_MS: '300', SVC_DIFF_TIMEOUT_MS: '700' } }, async ({ srv, repo, api, base }) => {
      await repo.commit('topic', { 'a.txt': 'a\n' });
      const cr = (await api.post(base, { title: 'Budget', head_ref: 'topic' })).body.change_request;
      const hole = await blackHole();
      try {
        // The repository now lives behind a listener that accepts and never answers.
        await srv.db.db.run({ text: 'UPDATE projects SET repo_url = $1', values: [`http://127.0.0.1:${hole.port}/x.git`] });
        let t0 = Date.now();
        const got = await api.get(`${base}/${cr.number}`);
        const elapsed = Date.now() - t0;
        expect(got.status).to.equal(200);
        expect(got.body.change_request).to.deep.equal(cr);
        expect(elapsed, `served in ${elapsed} ms`).to.be.below(1500);
        expect(hole.connections(), 'the refresh did try the remote').to.be.greaterThan(0);

        t0 = Date.now();
        const diff = await api.get(`${base}/${cr.number}/diff`);
        expect(diff.status).to.equal(504);
        expect(diff.body).to.include({ error: 'Repository timeout' });
        expect(diff.body.message).to.be.a('string');
        const preview = await api.get(`${base}/${cr.number}/merge-preview`);
        expect(preview.status).to.equal(504);
        expect(Date.now() - t0).to.be.below(5000);
      } finally {
        await hole.close();
      }
    }));
});
