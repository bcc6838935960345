import { expect } from 'chai';
import { daemonRefusal } from '../../../services/sessions/service.js';

describe("a sandbox daemon's refusal as the API's error (the daemon is untrusted)", () => {
  it('a malicious daemon cannot choose the reason or the code: an unknown reason is a plain refusal, a 5xx is ours', () => {
    const forged = daemonRefusal(409, { error: 'Approved by admin <script>', message: 'no' });
    expect(forged).to.include({ code: 'conflict', reason: 'Refused', message: 'no' });
    expect(daemonRefusal(403, { error: 'Merge failed' }), 'any 4xx but 409 is a validation refusal').to.include({ code: 'validation', reason: 'Merge failed' });
    expect(daemonRefusal(418, { error: { toString: 'x' }, message: 42 })).to.include({ code: 'validation', reason: 'Refused', message: 'The sandbox answered 418.' });
    expect(daemonRefusal(503, { error: 'Conflict', message: 'busy' })).to.include({ code: 'unavailable', reason: 'Sandbox unavailable', message: 'busy' });
    expect(daemonRefusal(400, null)).to.include({ code: 'validation', reason: 'Refused' });
  });

  it("the daemon's own reasons pass as they are", () => {
    for (const reason of ['Conflict', 'Validation failed', 'Rejected by runtime', 'Method not allowed', 'Not found']) {
      expect(daemonRefusal(409, { error: reason, message: 'm' }).reason).to.equal(reason);
    }
  });
});
