import { expect } from 'chai';
import { withProject } from '../support/server.js';
import { CHECKS_ENV, putManifest, settled } from '../int/checks/support.js';
import { csrfIn, dashFetch, signInHttp, withPassword } from './support.js';

describe('dashboard: the CR page shows checks, their logs, and asks merge when green', function () {
  this.timeout(180_000);

  it('a failed check with its log (text/plain, nosniff, never HTML), the required status, the button bound to the shown head; another account sees nothing', () =>
    withProject({ slug: 'dash-checks', env: CHECKS_ENV }, async (p) => {
      await putManifest(p, '[[checks]]\nname = "test"\nrun = "echo \'<script>alert(1)</script>\'; exit 1"\n\n[review]\nrequired_statuses = ["ci/e2e"]\n');
      const base = p.repo.tip('main')!;
      const head = await p.repo.commit('topic', { 'a.txt': 'a\n' });
      const cr = (await p.api.post(p.base, { title: 'a', head_ref: 'topic' })).body.change_request;
      const run = await settled(p, cr.number, 'test', { base, head });
      await withPassword(p.srv);
      const owner = await signInHttp(p.srv.url);
      const path = `/projects/dash-checks/change-requests/${cr.number}`;
      const page = await dashFetch(p.srv.url, owner, path);
      expect(page.status).to.equal(200);
      expect(page.text).to.contain('data-live="cr-checks"').and.contain('data-check="test"').and.contain('data-check-status="failed"');
      expect(page.text).to.contain('data-status-context="ci/e2e"').and.contain('(required)');
      expect(page.text).to.contain(`${path}/checks/${run.run_id}/log`);
      expect(page.text).to.contain(`name="expected_head_sha" value="${head}"`).and.contain('Merge when green');
      expect(page.text).to.not.contain('<script>alert(1)</script>');

      const log = await fetch(`${p.srv.url}${path}/checks/${run.run_id}/log`, { headers: { cookie: owner } });
      expect(log.headers.get('content-type')).to.match(/^text\/plain/);
      expect(log.headers.get('x-content-type-options')).to.equal('nosniff');
      expect(await log.text()).to.contain('<script>alert(1)</script>');

      const asked = await dashFetch(p.srv.url, owner, `${path}/merge-when-green`, { form: { _csrf: csrfIn(page.text), expected_head_sha: head } });
      expect(asked.status, asked.text).to.equal(303);
      expect(asked.location).to.equal(`${path}?notice=merge_when_green`);
      const after = await dashFetch(p.srv.url, owner, path);
      expect(after.text).to.match(/data-auto-merge="(pending|cancelled)"/); // the failed check cancels it at its next evaluation

      await p.srv.newUser('intruder@example.test');
      await withPassword(p.srv, 'intruder@example.test');
      const intruder = await signInHttp(p.srv.url, 'intruder@example.test');
      expect((await dashFetch(p.srv.url, intruder, `${path}/checks/${run.run_id}/log`)).status).to.equal(404);
    }));
});
