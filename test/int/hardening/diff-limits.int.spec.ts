import { expect } from 'chai';
import { withProject } from '../../support/server.js';
import { truncationNote } from '../../../cli/commands/cr/diff.js';
import { limitDiff } from '../../../services/change-requests/diff-limits.js';

describe('diff limits', function () {
  this.timeout(120_000);

  it('a 50 MB generated file: listed with its stats and patch_truncated, the rest of the diff intact, the response bounded', () =>
    withProject({ slug: 'huge', env: { SVC_DIFF_MAX_TOTAL_BYTES: '1000000' } }, async ({ repo, api, base }) => {
      const line = `${'x'.repeat(99)}\n`;
      const big = line.repeat(500_000); // 50 MB, 500k lines
      await repo.commit('gen', { 'a-small.txt': 'hello\n', 'generated.txt': big, 'z-small.txt': 'bye\n' });
      const cr = (await api.post(base, { title: 'Generated', head_ref: 'gen' })).body.change_request;
      const t0 = Date.now();
      const res = await api.get(`${base}/${cr.number}/diff`);
      const ms = Date.now() - t0;
      expect(res.status).to.equal(200);
      const body = res.body;
      expect(body.truncated).to.equal(true);
      expect(body.files_truncated).to.equal(false);
      const byPath = Object.fromEntries(body.files.map((f: { path: string }) => [f.path, f]));
      expect(byPath['generated.txt']).to.include({ status: 'added', additions: 500_000, deletions: 0, binary: false, patch_truncated: true });
      expect(byPath['a-small.txt'].patch_truncated).to.equal(false);
      expect(byPath['z-small.txt'].patch_truncated).to.equal(false);
      expect(body.patch).to.include('+hello');
      expect(body.patch).to.include('+bye');
      expect(body.patch).to.not.include('x'.repeat(99));
      expect(body.additions).to.equal(500_002);
      expect(JSON.stringify(body).length).to.be.below(1_100_000);
      console.log(`      50 MB file diff answered in ${ms} ms, ${JSON.stringify(body).length} bytes`);
      const note = truncationNote(body);
      expect(note).to.include('generated.txt (+500000 -0)');
    }));

  it('per-file, total and file-count limits', () => {
    const sec = (p: string, n: number) => `diff --git a/${p} b/${p}\n--- a/${p}\n+++ b/${p}\n@@ -0,0 +1,${n} @@\n${'+l\n'.repeat(n)}`;
    const files = ['a', 'b', 'c', 'd'].map((path) => ({ path, status: 'modified' as const, additions: 10, deletions: 0, binary: false }));
    const diff = { base_sha: 'b', head_sha: 'h', merge_base: 'm', files, additions: 40, deletions: 0, patch: ['a', 'b', 'c', 'd'].map((p) => sec(p, 10)).join('') };
    const limits = { maxFileBytes: 1e6, maxFileLines: 100, maxTotalBytes: 1e6, maxTotalLines: 30, maxFiles: 3 };
    const out = limitDiff(diff, limits);
    expect(out.files.map((f) => f.patch_truncated)).to.deep.equal([false, false, true]);
    expect(out.files_truncated).to.equal(true);
    expect(out.total_files).to.equal(4);
    expect(out.patch).to.equal(sec('a', 10) + sec('b', 10));
    expect(limitDiff(diff, { ...limits, maxFileLines: 5, maxFiles: 10 }).patch).to.equal('');
  });
});
