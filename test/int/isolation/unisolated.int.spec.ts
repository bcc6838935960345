import { expect } from 'chai';
import { waitForStatus, withSessionProject } from '../../support/sessions.js';

/**
 * The process provider isolates nothing: it runs when chosen, is shown
 * as unisolated, and once a second account exists it is refused unless
 * SVC_ALLOW_UNISOLATED=1 (which the shared test setup sets; this spec takes it back).
 */
describe('isolation: the process provider is refused once a second account exists', function () {
  this.timeout(120_000);

  it('runs a session with one account, refuses the next once another account exists, and says why', () =>
    withSessionProject({ slug: 'unisolated', env: { SVC_ALLOW_UNISOLATED: '0' } }, async ({ srv, api, sessions }) => {
      const first = await api.post(sessions, {});
      expect(first.status).to.equal(201);
      const ran = await waitForStatus(api, `${sessions}/${first.body.session.session_id}`, ['running', 'failed']);
      expect(ran.status, JSON.stringify(ran.error)).to.equal('running');
      expect(ran.sandbox.provider).to.equal('process');

      await srv.newUser('second-tenant@example.com');
      const second = await api.post(sessions, {});
      expect(second.status).to.equal(201);
      const failed = await waitForStatus(api, `${sessions}/${second.body.session.session_id}`, ['running', 'failed']);
      expect(failed.status).to.equal('failed');
      expect(failed.error.code).to.equal('unavailable');
      expect(failed.error.message).to.match(/isolates nothing.*SVC_SANDBOX_PROVIDER=bwrap.*SVC_ALLOW_UNISOLATED=1/);
    }));
});
