import { expect } from 'chai';
import { setFailpoint } from '../../../lib/failpoints.js';
import { repoUnavailable } from '../../../infra/git/errors.js';
import { eventTypes } from '../../support/merges.js';
import { openDivergedCr, withProject } from '../../support/server.js';

describe('a merge whose outcome is unknown keeps its record', function () {
  this.timeout(60_000);

  it('the push moved the remote and its answer was lost: the CR ends merged once, with the merge commit that was pushed', () =>
    withProject({ slug: 'lost-push' }, async (p) => {
      const { srv, repo, api, base } = p;
      const { cr, head } = await openDivergedCr(p, 'Lost answer');
      let hits = 0;
      let movedTo: string | null = null;
      const clear = setFailpoint('git.push.after-remote-moved', () => {
        hits++;
        movedTo = repo.tip('main');
        clear(); // once: the retry's reads answer normally
        throw repoUnavailable();
      });
      try {
        const merged = await api.post(`${base}/${cr.number}/merge`, {});
        expect(hits, 'the failpoint was reached').to.equal(1);
        expect(merged.status, JSON.stringify(merged.body)).to.equal(200);
        const now = (await api.get(`${base}/${cr.number}`)).body.change_request;
        expect(now.status).to.equal('merged');
        expect(now.merge_commit_sha).to.equal(movedTo);
        expect(repo.tip('main')).to.equal(movedTo);
        expect(now.head_commit_sha).to.equal(head);
        expect(await eventTypes(srv.db.db, cr.cr_id)).to.deep.equal(['ChangeRequestOpened', 'ChangeRequestMerged']);
        expect(await srv.db.db.rows({ text: 'SELECT cr_id FROM merge_attempts', values: [] })).to.deep.equal([]);
        // The base holds the merge once: its first parent is the old base, nothing on top.
        repo.git('fetch', '-q', 'origin');
        expect(repo.git('rev-parse', `${movedTo}^2`)).to.equal(head);
      } finally {
        clear();
      }
    }));
});
