import { expect } from 'chai';
import { withProject } from '../../support/server.js';
import { CHECKS_ENV, checksOf, crEvents, eventually, projectPath, putManifest, settled } from './support.js';

const GATED = `[[checks]]
name = "test"
run = "true"

[review]
required_statuses = ["ci/e2e"]
`;

describe('checks: merge when green', function () {
  this.timeout(240_000);

  it('is refused at once for nothing required (422), a conflict (409), a moved expected head (409)', () =>
    withProject({ slug: 'mwg-refusals', env: CHECKS_ENV }, async (p) => {
      const head = await p.repo.commit('topic', { 'a.txt': 'a\n' });
      const cr = (await p.api.post(p.base, { title: 'a', head_ref: 'topic' })).body.change_request;
      const none = await p.api.post(`${p.base}/${cr.number}/merge`, { when: 'checks_pass' });
      expect(none.status, JSON.stringify(none.body)).to.equal(422);
      expect(none.body.code).to.equal('no_required_checks');
      await putManifest(p, GATED);
      await p.repo.commit('clash', { 'README.md': 'one\n' });
      await p.repo.commit('main', { 'README.md': 'two\n' });
      const clash = (await p.api.post(p.base, { title: 'clash', head_ref: 'clash' })).body.change_request;
      const conflict = await p.api.post(`${p.base}/${clash.number}/merge`, { when: 'checks_pass' });
      expect(conflict.status, JSON.stringify(conflict.body)).to.equal(409);
      expect(conflict.body.conflicts).to.deep.equal(['README.md']);
      const stale = await p.api.post(`${p.base}/${cr.number}/merge`, { when: 'checks_pass', expected_head_sha: 'f'.repeat(40) });
      expect(stale.status).to.equal(409);
      const ok = await p.api.post(`${p.base}/${cr.number}/merge`, { when: 'checks_pass', expected_head_sha: head });
      expect(ok.status, JSON.stringify(ok.body)).to.equal(202);
      expect(ok.body.auto_merge).to.include({ status: 'pending', head_sha: head, requested_by: p.srv.userId });
    }));

  it('asked on one head, cancelled by a later push: nothing merges, even once everything is green', () =>
    withProject({ slug: 'mwg-push', env: CHECKS_ENV }, async (p) => {
      await putManifest(p, GATED);
      const base = p.repo.tip('main')!;
      const head1 = await p.repo.commit('topic', { 'a.txt': 'a\n' });
      const cr = (await p.api.post(p.base, { title: 'a', head_ref: 'topic' })).body.change_request;
      const asked = await p.api.post(`${p.base}/${cr.number}/merge`, { when: 'checks_pass' });
      expect(asked.status).to.equal(202);
      await settled(p, cr.number, 'test', { base, head: head1 });
      const head2 = await p.repo.commit('topic', { 'b.txt': 'unseen\n' });
      const cancelled = await eventually(async () => {
        const a = (await checksOf(p, cr.number)).auto_merge;
        return a?.status === 'cancelled' ? a : null;
      }, 'the cancellation');
      expect(cancelled).to.include({ head_sha: head1, reason: 'head_moved' });
      await settled(p, cr.number, 'test', { base, head: head2 });
      for (const h of [head1, head2]) expect((await p.api.post(`${projectPath(p)}/statuses/${h}`, { context: 'ci/e2e', state: 'success' })).status).to.equal(201);
      // Everything is green on head2 now: one more refresh round, and still nothing merged.
      const rounds = (await crEvents(p, cr.cr_id)).length;
      await p.repo.commit('main', { 'other.txt': 'base moves\n' });
      await eventually(async () => (await checksOf(p, cr.number)).checks[0]?.base_sha === p.repo.tip('main') && (await checksOf(p, cr.number)).checks[0]?.status === 'passed', 'a round on the moved base');
      expect((await crEvents(p, cr.cr_id)).length).to.be.above(rounds);
      expect((await p.api.get(`${p.base}/${cr.number}`)).body.change_request.status).to.equal('open');
      expect((await crEvents(p, cr.cr_id)).map((e) => e.type)).to.include('ChangeRequestAutoMergeCancelled').and.not.include('ChangeRequestMerged');
    }));

  it('a base moved between the check and the merge: the check runs again on the new merge result first', () =>
    withProject({ slug: 'mwg-base', env: CHECKS_ENV }, async (p) => {
      await putManifest(p, GATED);
      const base1 = p.repo.tip('main')!;
      const head = await p.repo.commit('topic', { 'a.txt': 'a\n' });
      const cr = (await p.api.post(p.base, { title: 'a', head_ref: 'topic' })).body.change_request;
      expect((await p.api.post(`${p.base}/${cr.number}/merge`, { when: 'checks_pass' })).status).to.equal(202);
      const first = await settled(p, cr.number, 'test', { base: base1, head });
      expect(first.status).to.equal('passed');
      const base2 = await p.repo.commit('main', { 'moved.txt': 'moved\n' });
      const again = await settled(p, cr.number, 'test', { base: base2, head });
      expect(again.status).to.equal('passed');
      expect((await p.api.post(`${projectPath(p)}/statuses/${head}`, { context: 'ci/e2e', state: 'success' })).status).to.equal(201);
      const merged = await eventually(async () => {
        const c = (await p.api.get(`${p.base}/${cr.number}`)).body.change_request;
        return c.status === 'merged' ? c : null;
      }, 'the merge');
      expect(merged).to.include({ base_commit_sha: base2, head_commit_sha: head, merged_by: p.srv.userId });
      // The merge of exactly the pair the check ran on (same parents: the same merge result).
      p.repo.git('fetch', '-q', 'origin');
      expect(p.repo.git('rev-list', '--parents', '-n', '1', merged.merge_commit_sha).split(' ').slice(1)).to.deep.equal([base2, head]);
      expect((await checksOf(p, cr.number)).auto_merge.status).to.equal('merged');
      const types = (await crEvents(p, cr.cr_id)).map((e) => e.type);
      expect(types.indexOf('ChangeRequestMerged')).to.be.above(types.lastIndexOf('CheckPassed'));
    }));

  it('a failing required status cancels it and says so', () =>
    withProject({ slug: 'mwg-fail', env: CHECKS_ENV }, async (p) => {
      await putManifest(p, GATED);
      const head = await p.repo.commit('topic', { 'a.txt': 'a\n' });
      const cr = (await p.api.post(p.base, { title: 'a', head_ref: 'topic' })).body.change_request;
      expect((await p.api.post(`${p.base}/${cr.number}/merge`, { when: 'checks_pass' })).status).to.equal(202);
      expect((await p.api.post(`${projectPath(p)}/statuses/${head}`, { context: 'ci/e2e', state: 'failure' })).status).to.equal(201);
      const a = await eventually(async () => {
        const x = (await checksOf(p, cr.number)).auto_merge;
        return x?.status === 'cancelled' ? x : null;
      }, 'the cancellation');
      expect(a.reason).to.equal('status_failed: ci/e2e');
      expect((await p.api.get(`${p.base}/${cr.number}`)).body.change_request.status).to.equal('open');
    }));
});
