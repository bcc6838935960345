import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { signUserContext } from '../../agentd/auth.js';
import { makeRemote, startDaemon, tempDir, type DaemonHandle } from './support/harness.js';

/**
 * A pool sandbox boots with a control key of its own (`svc_pool_…`), which stays in its
 * processes' environment after the claim (the runtime is not restarted). The claim rotates
 * the daemon's key to the session's: from then on the pool key opens nothing, neither the
 * control surface nor the proxy (a context signed with it), nor a second claim.
 */
describe('agentd: the pool key after the claim', function () {
  this.timeout(60_000);
  let d: DaemonHandle;
  let t: ReturnType<typeof tempDir>;
  let remote: ReturnType<typeof makeRemote>;
  const poolKey = `svc_pool_${randomBytes(24).toString('base64url')}`;
  const sessionKey = `svc_pat_${randomBytes(24).toString('base64url')}`;

  before(async () => {
    t = tempDir();
    remote = makeRemote(t.dir, { files: { 'README.md': 'pool\n' } });
    d = await startDaemon({ root: t.dir, env: { SVC_POOL: '1', SVC_TOKEN: poolKey, SVC_REPO_URL: remote.url, SVC_DEFAULT_BRANCH: remote.branch, SVC_BASE_REF: remote.branch } });
    await d.waitForAgent('running');
  });
  after(async () => {
    await d?.stop();
    t?.cleanup();
  });

  const now = () => Math.floor(Date.now() / 1000);
  const proxied = (key: string) => fetch(`${d.url}/global/health`, { headers: { 'x-svc-user-context': signUserContext(key, { sub: 'u', exp: now() + 60 }) } });

  it("refuses the pre-claim key on every control route and on the proxy once claimed; the session's key works", async () => {
    // Before the claim the pool key is the daemon's key.
    expect((await proxied(poolKey)).status).to.equal(200);
    expect((await d.control('/svc/env', { set: {}, unset: [] }, poolKey)).status).to.not.equal(401);

    const claimed = await d.control('/svc/claim', { token: sessionKey, session_id: 'session-one', branch: 'session-one', base_ref: remote.branch, env: { SVC_TOKEN: sessionKey } }, poolKey);
    expect(claimed.status, JSON.stringify(claimed.body)).to.equal(200);

    for (const route of ['/svc/prompt', '/svc/abort', '/svc/env', '/svc/checkpoint', '/svc/claim', '/svc/refresh']) {
      const r = await d.control(route, route === '/svc/claim' ? { token: poolKey, session_id: 'other', branch: 'other' } : {}, poolKey);
      expect(r.status, `${route} with the pool key`).to.equal(401);
    }
    const stale = await proxied(poolKey);
    expect(stale.status, 'a context signed with the pool key').to.equal(401);
    expect(await stale.text()).to.match(/signature/);

    // The session's key opens what the pool key did.
    expect((await proxied(sessionKey)).status).to.equal(200);
    expect((await d.control('/svc/env', { set: {}, unset: [] }, sessionKey)).status).to.not.equal(401);
    // And a second claim, even with the session's key, is refused: the sandbox is the session's.
    expect((await d.control('/svc/claim', { token: `svc_pat_${'x'.repeat(32)}`, session_id: 'two', branch: 'two' }, sessionKey)).status).to.not.equal(200);
  });
});
