import { expect } from 'chai';
import { serverAndRepo } from '../../support/suite.js';
import { client } from '../../support/http.js';

describe('concurrency', function () {
  this.timeout(120_000);
  const fx = serverAndRepo();
  let api: ReturnType<typeof client>;
  let base: string;

  before(async () => {
    api = client(fx.srv.url, fx.srv.token);
    const p = await api.post('/v1/projects', { name: 'Busy', repo_url: fx.repo.url });
    base = `/v1/projects/${p.body.project.project_id}/change-requests`;
  });

  it('numbers 50 parallel creates in one project 1..50, gapless, each once', async () => {
    await fx.repo.commit('feature-n', { 'n.txt': 'n\n' });
    const results = await Promise.all(Array.from({ length: 50 }, (_, i) => api.post(base, { title: `CR ${i}`, head_ref: 'feature-n' })));
    expect(results.every((r) => r.status === 201)).to.equal(true);
    const numbers = results.map((r) => r.body.change_request.number).sort((a, b) => a - b);
    expect(numbers).to.deep.equal(Array.from({ length: 50 }, (_, i) => i + 1));
    // Closing does not free a number.
    await api.post(`${base}/50/close`);
    expect((await api.post(base, { title: 'next', head_ref: 'feature-n' })).body.change_request.number).to.equal(51);
  });

  it('merges 20 CRs into one base concurrently: each ends merged or 409, the base holds exactly the merged ones', async () => {
    const branches = Array.from({ length: 20 }, (_, i) => `par-${i}`);
    // Disjoint files merge cleanly; every fourth CR also touches a shared file and may conflict.
    for (const [i, b] of branches.entries()) {
      await fx.repo.commit(b, { [`par/${i}.txt`]: `${i}\n`, ...(i % 4 === 0 ? { 'shared.txt': `from ${b}\n` } : {}) });
    }
    const crs = [];
    for (const b of branches) crs.push((await api.post(base, { title: b, head_ref: b })).body.change_request);
    const results = await Promise.all(crs.map((cr) => api.post(`${base}/${cr.number}/merge`, {})));
    const statuses = results.map((r) => r.status);
    expect(statuses.every((s) => s === 200 || s === 409), JSON.stringify(results.filter((r) => r.status !== 200 && r.status !== 409).map((r) => r.body))).to.equal(true);
    const merged = results.filter((r) => r.status === 200).map((r) => r.body.change_request);
    expect(merged.length).to.be.greaterThanOrEqual(16); // all non-sharing ones merge
    fx.repo.git('fetch', '-q', 'origin');
    const mainTip = fx.repo.tip('main')!;
    for (const [i, r] of results.entries()) {
      const contained = (() => {
        try {
          fx.repo.git('merge-base', '--is-ancestor', crs[i].head_commit_sha, mainTip);
          return true;
        } catch {
          return false;
        }
      })();
      expect(contained, `${branches[i]} status ${r.status}`).to.equal(r.status === 200);
      const state = (await api.get(`${base}/${crs[i].number}`)).body.change_request.status;
      expect(state).to.equal(r.status === 200 ? 'merged' : 'open');
    }
    // No lost commit: every merged CR's merge commit is on main.
    for (const cr of merged) fx.repo.git('merge-base', '--is-ancestor', cr.merge_commit_sha, mainTip);
  });
});
