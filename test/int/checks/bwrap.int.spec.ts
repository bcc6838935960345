import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { expect } from 'chai';
import { probeBwrap } from '../../../infra/sandbox/bwrap.js';
import { withProject } from '../../support/server.js';
import { skipUnlessCi } from '../../support/skip.js';
import { CHECKS_ENV, crEvents, putManifest, settled } from './support.js';

describe('checks under the bwrap provider', function () {
  this.timeout(180_000);

  before(function () {
    const probe = probeBwrap();
    if (!probe.ok) skipUnlessCi(this, `bubblewrap cannot run here: ${probe.reason}`);
  });

  it("runs in /workspace on the merge result, cannot read the server's data dir, fails then passes on a new pair", () =>
    withProject({ slug: 'chk-bwrap', env: { ...CHECKS_ENV, SVC_SANDBOX_PROVIDER: 'bwrap' } }, async (p) => {
      const probe = path.join(p.srv.dataDir, 'probe.txt');
      await writeFile(probe, 'server-only');
      const run = `pwd; cat ${probe} 2>/dev/null && echo LEAK; test -f fixed.txt`;
      await putManifest(p, `[[checks]]\nname = "unit"\nrun = "${run}"\n`);
      const base = p.repo.tip('main')!;
      const head1 = await p.repo.commit('topic', { 'a.txt': 'a\n' });
      const cr = (await p.api.post(p.base, { title: 'a', head_ref: 'topic' })).body.change_request;
      const failed = await settled(p, cr.number, 'unit', { base, head: head1 });
      expect(failed.status, JSON.stringify(failed)).to.equal('failed');
      const log = (await p.api.get(failed.log_url)).body as string;
      expect(log.split('\n')[0]).to.equal('/workspace');
      expect(log).to.not.contain('LEAK').and.not.contain('server-only');
      const head2 = await p.repo.commit('topic', { 'fixed.txt': 'ok\n' });
      expect((await settled(p, cr.number, 'unit', { base, head: head2 })).status).to.equal('passed');
      const started = (await crEvents(p, cr.cr_id)).filter((e) => e.type === 'CheckStarted');
      expect(started).to.have.length(2);
    }));
});
