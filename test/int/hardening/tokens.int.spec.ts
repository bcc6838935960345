import { expect } from 'chai';
import http from 'node:http';
import { WebSocket } from 'ws';
import { mintToken } from '../../../services/tokens/service.js';
import { startTestServer, withProject, type TestServer } from '../../support/server.js';
import { client } from '../../support/http.js';

/** Opens a feed; resolves once it is open (after its first message, when `first`). */
function openFeed(url: string, path: string, token: string): Promise<{ ws: WebSocket; closed: Promise<{ code: number; at: number }> }> {
  const ws = new WebSocket(`${url.replace(/^http/, 'ws')}${path}`, { headers: { authorization: `Bearer ${token}` } });
  const closed = new Promise<{ code: number; at: number }>((r) => ws.once('close', (code) => r({ code, at: Date.now() })));
  return new Promise((resolve, reject) => {
    ws.once('message', () => resolve({ ws, closed }));
    ws.once('unexpected-response', (_req, res) => reject(new Error(`refused: ${res.statusCode}`)));
    ws.once('error', reject);
  });
}

/** GET from a chosen loopback source address (127.0.0.2 is another client). */
function getFrom(url: string, path: string, token: string, localAddress: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.request(`${url}${path}`, { headers: { authorization: `Bearer ${token}` }, localAddress }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', reject);
    req.end();
  });
}

describe('tokens and sign-in abuse', function () {
  this.timeout(60_000);

  it('revoking or expiring a token closes its event feeds within 1 s; the next call is 401', () =>
    withProject({ slug: 'revoke' }, async ({ srv, repo, api, base }) => {
      await repo.commit('topic', { 'a.txt': 'a\n' });
      await api.post(base, { title: 'An event', head_ref: 'topic' });
      const revoked = await mintToken(srv.db.db, { userId: srv.userId, name: 'feed' });
      const expiring = await mintToken(srv.db.db, { userId: srv.userId, name: 'feed2' });
      const other = await mintToken(srv.db.db, { userId: srv.userId, name: 'keeps' });
      const a = await openFeed(srv.url, '/v1/projects/revoke/events', revoked.token);
      const b = await openFeed(srv.url, '/v1/projects/revoke/events', expiring.token);
      const c = await openFeed(srv.url, '/v1/projects/revoke/events', other.token);

      let t0 = Date.now();
      await srv.db.db.run({ text: 'UPDATE tokens SET revoked_at = now() WHERE token_id = $1', values: [revoked.token_id] });
      const closedA = await a.closed;
      expect(closedA.code).to.equal(1008);
      expect(closedA.at - t0, 'closed within a second of the revocation').to.be.at.most(1000);
      expect((await client(srv.url, revoked.token).get('/v1/projects')).status).to.equal(401);

      t0 = Date.now();
      await srv.db.db.run({ text: "UPDATE tokens SET expires_at = now() - interval '1 second' WHERE token_id = $1", values: [expiring.token_id] });
      const closedB = await b.closed;
      expect(closedB.code).to.equal(1008);
      expect(closedB.at - t0).to.be.at.most(1000);
      expect((await client(srv.url, expiring.token).get('/v1/projects')).status).to.equal(401);

      // The feed of a live token stays open.
      expect(c.ws.readyState).to.equal(WebSocket.OPEN);
      c.ws.close();
    }));

  it('a token minted already expired is 401', () =>
    withProject({ slug: 'expired' }, async ({ srv }) => {
      const t = await mintToken(srv.db.db, { userId: srv.userId, name: 'old', expiresAt: new Date(Date.now() - 1000) });
      const r = await client(srv.url, t.token).get('/v1/projects');
      expect(r.status).to.equal(401);
      expect(r.body.error).to.equal('Unauthorized');
    }));

  it('a feed checkpoint of another project is refused like an unknown one', () =>
    withProject({ slug: 'feed-a' }, async ({ srv, repo, api }) => {
      await api.post('/v1/projects', { name: 'feed-b', slug: 'feed-b', repo_url: repo.url });
      await repo.commit('topic', { 'b.txt': 'b\n' });
      const crB = (await api.post('/v1/projects/feed-b/change-requests', { title: 'B', head_ref: 'topic' })).body.change_request;
      const pos = (await api.get(`/v1/projects/feed-b/change-requests/${crB.number}/events`)).body.events[0].global_position;
      const own = await api.get(`/v1/projects/feed-b/events?after=${pos}`);
      expect(own.status, 'own checkpoint accepted (then 426: not an upgrade)').to.equal(426);
      const foreign = await api.get(`/v1/projects/feed-a/events?after=${pos}`);
      expect(foreign.status).to.equal(400);
      expect(foreign.body.issues[0].path).to.equal('after');
      void srv;
    }));

  describe('rate limit on failed authentication', () => {
    let srv: TestServer;
    before(async () => (srv = await startTestServer({ env: { SVC_AUTH_FAILURE_LIMIT: '20', SVC_AUTH_FAILURE_WINDOW_S: '60' } })));
    after(() => srv?.stop());

    it('1,000 bad tokens from one address: 20 answered 401, the rest 429 with Retry-After; other addresses unaffected', async () => {
      const bad = Array.from({ length: 1000 }, (_, i) => `svc_pat_${'x'.repeat(30)}${i}`);
      const statuses: number[] = [];
      const retryAfter: number[] = [];
      for (let i = 0; i < bad.length; i += 100) {
        const rs = await Promise.all(bad.slice(i, i + 100).map((t) => client(srv.url, t).get('/v1/projects')));
        for (const r of rs) {
          statuses.push(r.status);
          if (r.status === 429) retryAfter.push(Number(r.headers.get('retry-after')));
        }
      }
      expect(statuses.filter((s) => s === 401).length).to.equal(20);
      expect(statuses.filter((s) => s === 429).length).to.equal(980);
      expect(retryAfter.every((s) => s >= 1 && s <= 60)).to.equal(true);
      // Another client address still authenticates.
      expect(await getFrom(srv.url, '/v1/projects', srv.token, '127.0.0.2')).to.equal(200);
      // A request without any credential is not a guess: still a plain 401.
      expect((await client(srv.url).get('/v1/projects')).status).to.equal(401);
    });
  });
});
