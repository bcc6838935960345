import { expect } from 'chai';
import { withProject } from '../../support/server.js';
import { CHECKS_ENV, checksOf, crEvents, eventually, putManifest, settled } from './support.js';

/** A check that passes, and a required status nobody posts: merge-when-green stays pending until something ends it. */
const GATED = `[[checks]]
name = "test"
run = "true"

[review]
required_statuses = ["ci/e2e"]
`;

describe('stacked change requests: checks and merge-when-green', function () {
  this.timeout(240_000);

  it('a child merged alone ends its parent\'s merge-when-green (head_moved); a person\'s retarget ends one with base_changed; a parent merged moves its child, whose checks run on the new pair', () =>
    withProject({ slug: 'stack-checks', env: CHECKS_ENV }, async (p) => {
      await putManifest(p, GATED);
      const parentHead = await p.repo.commit('p', { 'p.txt': 'p\n' });
      await p.repo.commit('c1', { 'c1.txt': '1\n' }, { from: 'p' });
      await p.repo.commit('c2', { 'c2.txt': '2\n' }, { from: 'p' });
      const parent = (await p.api.post(p.base, { title: 'parent', head_ref: 'p' })).body.change_request;
      const c1 = (await p.api.post(p.base, { title: 'c1', head_ref: 'c1', base_ref: 'p' })).body.change_request;
      const c2 = (await p.api.post(p.base, { title: 'c2', head_ref: 'c2', base_ref: 'p' })).body.change_request;
      const stack = (await p.api.get(`${p.base}/${parent.number}/stack`)).body;
      expect(stack.stack[0].child_cr_ids).to.deep.equal([c1.cr_id, c2.cr_id]);

      // The parent's merge-when-green, bound to its head; c1 merged alone lands on p.
      const asked = await p.api.post(`${p.base}/${parent.number}/merge`, { when: 'checks_pass', expected_head_sha: parentHead });
      expect(asked.status, JSON.stringify(asked.body)).to.equal(202);
      const merged = await p.api.post(`${p.base}/${c1.number}/merge`, {});
      expect(merged.status, JSON.stringify(merged.body)).to.equal(200);
      expect(merged.body.change_request.base_ref).to.equal('p');
      expect(p.repo.tip('p')).to.equal(merged.body.change_request.merge_commit_sha);
      const ended = (await checksOf(p, parent.number)).auto_merge;
      expect(ended).to.include({ status: 'cancelled', head_sha: parentHead, reason: 'head_moved' });

      // c2's merge-when-green ends with a person's retarget, in the retarget's own event.
      expect((await p.api.post(`${p.base}/${c2.number}/merge`, { when: 'checks_pass' })).status).to.equal(202);
      expect((await p.api.patch(`${p.base}/${c2.number}`, { base_ref: 'main' })).status).to.equal(200);
      expect((await checksOf(p, c2.number)).auto_merge).to.include({ status: 'cancelled', reason: 'base_changed' });
      const types = (await crEvents(p, c2.cr_id)).map((e) => e.type);
      expect(types.filter((t) => t === 'ChangeRequestAutoMergeCancelled')).to.have.length(0);
      expect((await p.api.patch(`${p.base}/${c2.number}`, { base_ref: 'p' })).status).to.equal(200);

      // The parent merges into main: c2 moves onto main by the server, its checks run on (main, c2).
      const c2Head = p.repo.tip('c2')!;
      // Back on p (a pair it may have had a run cancelled on when it left): its checks run again.
      await settled(p, c2.number, 'test', { base: p.repo.tip('p')!, head: c2Head });
      expect((await p.api.post(`${p.base}/${parent.number}/merge`, {})).status).to.equal(200);
      const moved = (await p.api.get(`${p.base}/${c2.number}`)).body.change_request;
      expect(moved).to.include({ base_ref: 'main', base_commit_sha: p.repo.tip('main') });
      const run = await settled(p, c2.number, 'test', { base: p.repo.tip('main')!, head: c2Head });
      expect(run.status).to.equal('passed');
      const retarget = (await crEvents(p, c2.cr_id)).filter((e) => e.type === 'ChangeRequestRetargeted').map((e) => e.data.by);
      expect(retarget).to.deep.equal([p.srv.userId, p.srv.userId, 'system']);
      await eventually(async () => (await checksOf(p, c2.number)).checks.every((c) => c.base_sha === p.repo.tip('main')), 'only the new pair listed');
    }));
});
