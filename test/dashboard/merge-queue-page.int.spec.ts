import { expect } from 'chai';
import { withProject } from '../support/server.js';
import { putManifest } from '../int/checks/support.js';
import { checkScript, eventually, queueManifest } from '../int/merge-queue/support.js';
import { csrfIn, dashFetch, signInHttp, withPassword } from './support.js';

describe('dashboard: the merge queue page and the CR page say where a CR is', function () {
  this.timeout(180_000);

  it("the button queues; the queue page lists it with its result and checks (no inline script or style); Remove takes it out and the CR page says why; another account sees nothing", () =>
    withProject({ slug: 'dash-mq', env: { SVC_SCHEDULER: '0', SVC_CHECKS_REFRESH_MS: '200' } }, async (p) => {
      await putManifest(p, queueManifest(), { 'check.sh': checkScript(30) });
      const head = await p.repo.commit('topic', { 'a.txt': '<script>alert(1)</script>\n' });
      const cr = (await p.api.post(p.base, { title: '<b>queued</b>', head_ref: 'topic' })).body.change_request;
      await withPassword(p.srv);
      const owner = await signInHttp(p.srv.url);
      const crPath = `/projects/dash-mq/change-requests/${cr.number}`;
      const page = await dashFetch(p.srv.url, owner, crPath);
      const asked = await dashFetch(p.srv.url, owner, `${crPath}/merge-when-green`, { form: { _csrf: csrfIn(page.text), expected_head_sha: head } });
      expect(asked.status, asked.text).to.equal(303);
      const onCr = await dashFetch(p.srv.url, owner, crPath);
      expect(onCr.text).to.contain('data-merge-queue="queued"').and.not.contain('>Merge when green</button>');

      const queuePath = '/projects/dash-mq/merge-queue';
      const q = await eventually(async () => {
        const r = await dashFetch(p.srv.url, owner, `${queuePath}?base=main`);
        return r.text.includes('data-state="checking"') ? r : null;
      }, 'the entry checking on the queue page', 60_000);
      expect(q.status).to.equal(200);
      expect(q.text).to.contain(`data-queue-entry="${cr.number}"`).and.contain('&lt;b&gt;queued&lt;/b&gt;').and.not.contain('<b>queued</b>');
      expect(q.text, 'no inline script').to.not.match(/<script(?![^>]*\bsrc=)[^>]*>/);
      expect(q.text, 'no inline style').to.not.match(/<style|\sstyle=/);

      const removed = await dashFetch(p.srv.url, owner, `${queuePath}/${cr.number}/remove`, { form: { _csrf: csrfIn(q.text), base: 'main' } });
      expect(removed.status, removed.text).to.equal(303);
      const after = await dashFetch(p.srv.url, owner, crPath);
      expect(after.text).to.contain('data-merge-queue="left"').and.contain('data-reason="by_person"');
      const emptied = await dashFetch(p.srv.url, owner, `${queuePath}?base=main`);
      expect(emptied.text).to.contain(`data-queue-left="${cr.number}"`).and.contain('data-outcome="by_person"');

      await p.srv.newUser('intruder@example.test');
      await withPassword(p.srv, 'intruder@example.test');
      const intruder = await signInHttp(p.srv.url, 'intruder@example.test');
      expect((await dashFetch(p.srv.url, intruder, queuePath)).status).to.equal(404);
      const forged = await dashFetch(p.srv.url, intruder, `${queuePath}/${cr.number}/remove`, { form: { _csrf: csrfIn(q.text), base: 'main' } });
      expect(forged.status, 'another account cannot take a CR out').to.be.oneOf([403, 404]);
    }));
});
