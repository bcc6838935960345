import { expect } from 'chai';
import { withProject } from '../../support/server.js';
import { CHECKS_ENV, crEvents, eventually, putManifest } from './support.js';

describe('checks: ten merge-when-green requests into one base', function () {
  this.timeout(600_000);

  it('merge one by one (SVC_CHECKS_CONCURRENCY=2), each only on a passing result for the base it merged onto', () =>
    withProject({ slug: 'mwg-ten', env: { ...CHECKS_ENV, SVC_CHECKS_CONCURRENCY: '2' } }, async (p) => {
      await putManifest(p, '[[checks]]\nname = "trivial"\nrun = "true"\n');
      const crs: { cr_id: string; number: number; head: string }[] = [];
      for (let i = 0; i < 10; i++) {
        const head = await p.repo.commit(`t${i}`, { [`f${i}.txt`]: `${i}\n` }, { from: 'main' });
        const cr = (await p.api.post(p.base, { title: `t${i}`, head_ref: `t${i}` })).body.change_request;
        crs.push({ cr_id: cr.cr_id, number: cr.number, head });
      }
      for (const c of crs) expect((await p.api.post(`${p.base}/${c.number}/merge`, { when: 'checks_pass', expected_head_sha: c.head })).status).to.equal(202);
      await eventually(async () => {
        const all = await Promise.all(crs.map(async (c) => (await p.api.get(`${p.base}/${c.number}`)).body.change_request.status));
        return all.every((s) => s === 'merged');
      }, 'all ten merged', 540_000);
      const merges: { base: string; head: string; sha: string; at: string }[] = [];
      for (const c of crs) {
        const events = await crEvents(p, c.cr_id);
        const m = events.find((e) => e.type === 'ChangeRequestMerged')!;
        // A run of the check passed on exactly the pair it merged, before it merged.
        const queued = events.filter((e) => e.type === 'CheckQueued' && e.data.base_sha === m.data.base_commit_sha && e.data.head_sha === c.head);
        const passed = queued.filter((q) => events.some((e) => e.type === 'CheckPassed' && e.data.run_id === q.data.run_id && e.data.finished_at <= m.data.merged_at));
        expect(passed, `#${c.number} merged on a pair without a passing run`).to.have.length.above(0);
        expect(m.data.head_commit_sha).to.equal(c.head);
        expect(events.filter((e) => e.type === 'ChangeRequestMerged')).to.have.length(1);
        merges.push({ base: m.data.base_commit_sha, head: c.head, sha: m.data.merge_commit_sha, at: m.data.merged_at });
      }
      // One by one: each merge's base is the previous merge's result, a single chain from main's old tip.
      merges.sort((a, b) => a.at.localeCompare(b.at));
      for (let i = 1; i < merges.length; i++) expect(merges[i]!.base).to.equal(merges[i - 1]!.sha);
      p.repo.git('fetch', '-q', 'origin');
      expect(p.repo.git('rev-parse', 'origin/main')).to.equal(merges[merges.length - 1]!.sha);
    }));
});
