import { expect } from 'chai';
import WebSocket from 'ws';
import { mintToken } from '../../../services/tokens/service.js';
import { agentReady, waitForStatus, withSessionProject } from '../../support/sessions.js';

/**
 * A WebSocket proxied to a sandbox (agent and preview routes) is cut within a second of its
 * token's revocation or the session's stop: a revoked credential must not keep a live pipe.
 */

/** A proxied socket, open and answering; `closed` resolves with when it closed. */
async function openSocket(url: string, token: string): Promise<{ ws: WebSocket; closed: Promise<number> }> {
  const ws = new WebSocket(url, { headers: { authorization: `Bearer ${token}` } });
  const closed = new Promise<number>((resolve) => ws.once('close', () => resolve(Date.now())));
  await new Promise<void>((resolve, reject) => {
    ws.once('open', () => ws.send('hello'));
    ws.on('message', (m) => m.toString().includes('hello') && resolve());
    ws.once('error', reject);
    ws.once('unexpected-response', (_q, r) => reject(new Error(`refused: ${r.statusCode}`)));
    setTimeout(() => reject(new Error('no reply on the socket')), 10_000);
  });
  return { ws, closed };
}

/** When the socket closed; fails (instead of hanging) when it is still open after 3 s. */
const closedAt = (sock: { closed: Promise<number> }) =>
  Promise.race([sock.closed, new Promise<number>((_, reject) => setTimeout(() => reject(new Error('the socket is still open 3 s later')), 3000).unref())]);

describe('proxied WebSockets (and event streams) end with their token and their session', function () {
  this.timeout(90_000);

  it('agent and preview sockets close within 1 s of their token\'s revocation; a socket of a live token stays open; then within 1 s of the session\'s stop', () =>
    withSessionProject({ slug: 'wsrevoke' }, async ({ srv, api, sessions }) => {
      const s = (await api.post(sessions, {})).body.session;
      const live = `${sessions}/${s.session_id}`;
      await waitForStatus(api, live, ['running']);
      const env = (await agentReady(api, `${live}/agent/fake/state`)).body.env as Record<string, string>;
      const ws = srv.url.replace(/^http/, 'ws');
      const agentUrl = `${ws}${live}/agent/socket`;
      const previewUrl = `${ws}${live}/preview/${env.SVC_AGENT_PORT}/socket`;

      const revoked = await mintToken(srv.db.db, { userId: srv.userId, name: 'ws-revoked' });
      const keeps = await mintToken(srv.db.db, { userId: srv.userId, name: 'ws-keeps' });
      const a = await openSocket(agentUrl, revoked.token);
      const p = await openSocket(previewUrl, revoked.token);
      const k = await openSocket(agentUrl, keeps.token);
      const kp = await openSocket(previewUrl, keeps.token);
      // An event stream (SSE) of the agent, opened with the same token.
      const sse = await fetch(`${srv.url}${live}/agent/event?count=100000&interval=50`, { headers: { authorization: `Bearer ${revoked.token}` } });
      expect(sse.status).to.equal(200);
      const reader = sse.body!.getReader();
      expect((await reader.read()).done).to.equal(false);
      const sseEnded = (async () => {
        for (;;) {
          const c = await reader.read().catch(() => ({ done: true }));
          if (c.done) return Date.now();
        }
      })();

      // Revoked through the API, as a person would.
      let t0 = Date.now();
      expect((await api.call('DELETE', `/v1/accounts/tokens/${revoked.token_id}`)).status).to.equal(204);
      const [aAt, pAt, sseAt] = await Promise.all([closedAt(a), closedAt(p), closedAt({ closed: sseEnded })]);
      expect(sseAt - t0, 'event stream ended within 1 s of the revocation').to.be.at.most(1000);
      expect(aAt - t0, 'agent socket closed within 1 s of the revocation').to.be.at.most(1000);
      expect(pAt - t0, 'preview socket closed within 1 s of the revocation').to.be.at.most(1000);
      expect(k.ws.readyState).to.equal(WebSocket.OPEN);
      expect(kp.ws.readyState).to.equal(WebSocket.OPEN);
      // The revoked token cannot open a new one.
      await openSocket(agentUrl, revoked.token).then(
        () => expect.fail('a revoked token opened a socket'),
        (err: Error) => expect(err.message).to.equal('refused: 401'),
      );

      // The session's stop, recorded while the sandbox is still up (its teardown can lag: a
      // pod's grace period), cuts the sockets by itself.
      t0 = Date.now();
      await srv.db.db.run({ text: `UPDATE project_sessions SET status = 'stopped' WHERE session_id = $1`, values: [s.session_id] });
      const [kAt, kpAt] = await Promise.all([closedAt(k), closedAt(kp)]);
      expect(kAt - t0, 'agent socket closed within 1 s of the stop').to.be.at.most(1000);
      expect(kpAt - t0, 'preview socket closed within 1 s of the stop').to.be.at.most(1000);
    }));

  it('a real stop: the socket closes within 1 s of the stop request', () =>
    withSessionProject({ slug: 'wsstop' }, async ({ srv, api, sessions }) => {
      const s = (await api.post(sessions, {})).body.session;
      const live = `${sessions}/${s.session_id}`;
      await waitForStatus(api, live, ['running']);
      await agentReady(api, `${live}/agent/fake/state`);
      const sock = await openSocket(`${srv.url.replace(/^http/, 'ws')}${live}/agent/socket`, srv.token);
      const t0 = Date.now();
      const stopped = await api.post(`${live}/stop`, {});
      expect(stopped.status, JSON.stringify(stopped.body)).to.be.oneOf([200, 202]);
      expect((await closedAt(sock)) - t0).to.be.at.most(1000);
    }));
});
