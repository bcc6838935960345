import { expect } from 'chai';
import { randomBytes, randomUUID } from 'node:crypto';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { WebSocket } from 'ws';
import { append } from '../../../infra/event-store.js';
import { executor, type Db, type Query } from '../../../infra/db/db.js';
import { createFeedHub } from '../../../api/feed-hub.js';
import { mintToken } from '../../../services/tokens/service.js';
import { serverAndRepo } from '../../support/suite.js';
import { startTestServer } from '../../support/server.js';
import { client } from '../../support/http.js';
import { createEventsFeed } from '../../../api/routes/events-feed.js';
import { feedReads } from '../../../services/api-services/server.js';
import { bind } from '../../../services/api-services/bind.js';
import { projectForCaller } from '../../../services/projects/access.js';
import type { ApiDeps } from '../../../api/deps.js';
import { silentLogger } from '../../../lib/logger.js';
import { until } from '../../support/wait.js';

interface FeedMessage {
  global_position: number;
  stream_id: string;
  stream_position: number;
  type: string;
  data: Record<string, unknown>;
  actor: string;
  recorded_at: string;
}

interface Feed {
  ws: WebSocket;
  messages: FeedMessage[];
  /** Resolves once `n` messages have arrived (all of them so far). */
  take(n: number, timeoutMs?: number): Promise<FeedMessage[]>;
  closed: Promise<{ code: number; reason: string }>;
}

/** Opens the feed; resolves once upgraded, rejects with the HTTP refusal otherwise. */
function openFeed(url: string, path: string, token?: string): Promise<Feed> {
  const ws = new WebSocket(`${url.replace(/^http/, 'ws')}${path}`, token ? { headers: { authorization: `Bearer ${token}` } } : {});
  const messages: FeedMessage[] = [];
  const waiters: (() => void)[] = [];
  ws.on('message', (raw) => {
    messages.push(JSON.parse(raw.toString()) as FeedMessage);
    waiters.splice(0).forEach((w) => w());
  });
  const closed = new Promise<{ code: number; reason: string }>((r) => ws.once('close', (code, reason) => r({ code, reason: reason.toString() })));
  const take = async (n: number, timeoutMs = 10_000) => {
    const deadline = Date.now() + timeoutMs;
    while (messages.length < n) {
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`expected ${n} messages, got ${messages.length}: ${messages.map((m) => m.type).join(', ')}`);
      await new Promise<void>((r) => {
        waiters.push(r);
        setTimeout(r, left);
      });
    }
    return messages.slice();
  };
  return new Promise((resolve, reject) => {
    ws.once('open', () => resolve({ ws, messages, take, closed }));
    ws.once('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString()));
      res.on('end', () => reject(Object.assign(new Error(`HTTP ${res.statusCode}`), { status: res.statusCode, body: JSON.parse(body || 'null') })));
    });
    ws.once('error', (err) => reject(err));
  });
}

async function refusal(p: Promise<Feed>): Promise<{ status: number; body: { error: string; message: string } }> {
  try {
    const feed = await p;
    feed.ws.close();
  } catch (err) {
    return err as never;
  }
  throw new Error('expected the upgrade to be refused');
}

/** A feed on its own HTTP server, behind a stand-in for the auth middleware (the owner's principal). */
async function standaloneFeed(feedUnderTest: ReturnType<typeof createEventsFeed>): Promise<{ url: string; close(): Promise<void> }> {
  const app = express();
  // A live token: feeds close when their token is revoked (or has no row).
  const { token_id } = await mintToken(standaloneUser.db, { userId: standaloneUser.id, name: 'standalone-feed' });
  app.use('/v1/projects/:projectId/events', (req, _res, next) => {
    req.principal = { token_id, user_id: standaloneUser.id, email: 'owner@example.test', user_name: 'Owner', project_id: null, grade: 'person', sandbox_id: null, session_id: null };
    next();
  }, feedUnderTest.routes({ services: { projects: { forCaller: bind(standaloneUser.db, projectForCaller) } } } as unknown as ApiDeps));
  const server = http.createServer(app);
  server.on('upgrade', feedUnderTest.upgradeHandler(app));
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    async close() {
      await feedUnderTest.close();
      await new Promise((r) => server.close(r));
    },
  };
}
const standaloneUser = { id: '', db: undefined as unknown as Db };

describe('events feed (WebSocket)', function () {
  this.timeout(60_000);
  const fx = serverAndRepo();
  let api: ReturnType<typeof client>;
  let projectId: string;
  let feedPath: string;
  const open: Feed[] = [];
  const feed = async (path: string, token: string | undefined = fx.srv.token) => {
    const f = await openFeed(fx.srv.url, path, token);
    open.push(f);
    return f;
  };

  before(async () => {
    await fx.repo.commit('feature', { 'f.txt': 'f\n' });
    api = client(fx.srv.url, fx.srv.token);
    standaloneUser.id = fx.srv.userId;
    standaloneUser.db = fx.srv.db.db;
    projectId = (await api.post('/v1/projects', { name: 'Feed', repo_url: fx.repo.url })).body.project.project_id;
    feedPath = `/v1/projects/${projectId}/events`;
  });
  afterEach(() => {
    for (const f of open.splice(0)) f.ws.terminate();
  });

  it('refuses before the upgrade: 401 without or with a bad token, 403 for another project, 404 for an unknown project or one of another account', async () => {
    const owner = client(fx.srv.url, fx.srv.token);
    const other = (await owner.post('/v1/projects', { name: 'Elsewhere', repo_url: fx.repo.url })).body.project.project_id;
    const otherToken = (await owner.post(`/v1/projects/${other}/cli-token`)).body.token;
    const stranger = await fx.srv.newUser('feed-stranger@example.test');
    const cases: [string, string | undefined, number, string][] = [
      [feedPath, undefined, 401, 'Unauthorized'],
      [feedPath, `svc_pat_${randomBytes(32).toString('base64url')}`, 401, 'Unauthorized'],
      [`${feedPath}?access_token=not-a-token`, undefined, 401, 'Unauthorized'],
      [feedPath, otherToken, 403, 'Forbidden'],
      [feedPath, stranger.token, 404, 'Not found'],
      ['/v1/projects/no-such-project/events', fx.srv.token, 404, 'Not found'],
      [`${feedPath}?after=999999999`, fx.srv.token, 400, 'Validation failed'],
      [`${feedPath}?after=-1`, fx.srv.token, 400, 'Validation failed'],
      [`/v1/projects/${projectId}/nope`, fx.srv.token, 404, 'Not found'],
    ];
    for (const [path, token, status, error] of cases) {
      const res = await refusal(openFeed(fx.srv.url, path, token));
      expect(res.status, `${path} ${token ? 'with a token' : 'without a token'}`).to.equal(status);
      expect(res.body.error).to.equal(error);
      expect(res.body.message).to.be.a('string');
    }
  });

  it('answers a plain GET with 426 and the error body; accepts ?access_token= for browsers', async () => {
    const plain = await api.get(feedPath);
    expect(plain.status).to.equal(426);
    expect(plain.body.error).to.equal('Upgrade required');
    expect(plain.headers.get('upgrade')).to.equal('websocket');
    expect((await client(fx.srv.url).get(feedPath)).status, 'auth is checked first').to.equal(401);
    const f = await feed(`${feedPath}?access_token=${fx.srv.token}`, undefined);
    expect(f.ws.readyState).to.equal(WebSocket.OPEN);
    const doc = (await client(fx.srv.url).get('/v1/openapi.json')).body;
    expect(doc.paths['/v1/projects/{projectId}/events'].get.responses).to.have.keys('101', '400', '401', '403', '404', '413', '426', '429', '500');
  });

  it('refuses a malformed handshake with 400 and the error body, issues included', async () => {
    const res = await new Promise<{ status: number; body: { error: string; issues?: { path: string; message: string }[] } }>((resolve, reject) => {
      const u = new URL(feedPath, fx.srv.url);
      const req = http.request({
        host: u.hostname,
        port: u.port,
        path: u.pathname,
        headers: { authorization: `Bearer ${fx.srv.token}`, connection: 'Upgrade', upgrade: 'websocket', 'sec-websocket-key': 'short', 'sec-websocket-version': '13' },
      });
      req.on('response', (r) => {
        let text = '';
        r.on('data', (c: Buffer) => (text += c.toString('utf8')));
        r.on('end', () => resolve({ status: r.statusCode ?? 0, body: JSON.parse(text) }));
      });
      req.on('upgrade', () => reject(new Error('upgraded with a malformed key')));
      req.on('error', reject);
      req.end();
    });
    expect(res.status).to.equal(400);
    expect(res.body.error).to.equal('Validation failed');
    expect(res.body.issues).to.deep.equal([{ path: '(request)', message: 'Not a valid WebSocket handshake (Sec-WebSocket-Key / Sec-WebSocket-Version 13).' }]);
  });

  it('streams create, close and reopen in order, with the message shape; nothing of other projects', async () => {
    const owner = client(fx.srv.url, fx.srv.token);
    const p2 = (await owner.post('/v1/projects', { name: 'Quiet', repo_url: fx.repo.url })).body.project.project_id;
    const f = await feed(`/v1/projects/${p2}/events`);
    // The project's manifest syncs (the manifest in force follows main from the first read on) are its events too; left out here.
    const own = async (n: number) => {
      await until(() => f.messages.filter((m) => !m.stream_id.startsWith('manifest-')).length >= n, `${n} CR events`, { timeoutMs: 10_000 });
      return f.messages.filter((m) => !m.stream_id.startsWith('manifest-'));
    };
    const elsewhere = await owner.post(`/v1/projects/${projectId}/change-requests`, { title: 'Not for p2', head_ref: 'feature' });
    expect(elsewhere.status).to.equal(201);
    const cr = (await owner.post(`/v1/projects/${p2}/change-requests`, { title: 'Watched', head_ref: 'feature' })).body.change_request;
    expect((await owner.post(`/v1/projects/${p2}/change-requests/${cr.number}/close`)).status).to.equal(200);
    expect((await owner.post(`/v1/projects/${p2}/change-requests/${cr.number}/reopen`)).status).to.equal(200);
    const got = await own(3);
    expect(got.map((m) => m.type)).to.deep.equal(['ChangeRequestOpened', 'ChangeRequestClosed', 'ChangeRequestReopened']);
    expect(got.map((m) => m.stream_position)).to.deep.equal([1, 2, 3]);
    expect(got.every((m) => m.stream_id === got[0]!.stream_id && m.stream_id.includes(cr.cr_id))).to.equal(true);
    expect(got[1]!.global_position).to.be.greaterThan(got[0]!.global_position);
    expect(got[2]!.global_position).to.be.greaterThan(got[1]!.global_position);
    expect(Object.keys(got[0]!)).to.deep.equal(['global_position', 'stream_id', 'stream_position', 'type', 'data', 'actor', 'recorded_at']);
    expect(got[0]!.actor).to.equal(fx.srv.userId);
    expect(got[0]!.data).to.include({ title: 'Watched', head_ref: 'feature' });
    expect(new Date(got[0]!.recorded_at).toISOString()).to.equal(got[0]!.recorded_at);
    // A marker appended after them: once it arrives, everything before it has too (the feed is ordered).
    await fx.srv.db.db.transaction((tx) =>
      append(tx, { streamId: `test-${randomUUID()}`, streamType: 'test', projectId: p2, expectedVersion: 0, events: [{ type: 'Marker', data: {} }], metadata: { actor: fx.srv.userId } }),
    );
    const all = await own(4);
    expect(all.map((m) => m.type), 'no more than the three before the marker').to.deep.equal(['ChangeRequestOpened', 'ChangeRequestClosed', 'ChangeRequestReopened', 'Marker']);
    expect(f.messages.every((m) => m.stream_id.includes(cr.cr_id) || m.stream_id === `manifest-${p2}` || m.type === 'Marker'), 'nothing of other projects').to.equal(true);
  });

  it('resumes with ?after=: only later events, then live ones', async () => {
    const cr = (await api.post(`/v1/projects/${projectId}/change-requests`, { title: 'Resume', head_ref: 'feature' })).body.change_request;
    await api.post(`/v1/projects/${projectId}/change-requests/${cr.number}/close`);
    const history = (await api.get(`/v1/projects/${projectId}/change-requests/${cr.number}/events`)).body.events;
    const opened = history[0].global_position as number;
    const f = await feed(`${feedPath}?after=${opened}`);
    const first = await f.take(1);
    expect(first[0]!.global_position).to.be.greaterThan(opened);
    expect(first.some((m) => m.type === 'ChangeRequestOpened' && m.stream_id.includes(cr.cr_id))).to.equal(false);
    await api.post(`/v1/projects/${projectId}/change-requests/${cr.number}/reopen`);
    const deadline = Date.now() + 10_000;
    while (!f.messages.some((m) => m.type === 'ChangeRequestReopened' && m.stream_id.includes(cr.cr_id))) {
      expect(Date.now(), 'the reopen arrives live').to.be.lessThan(deadline);
      await f.take(f.messages.length + 1);
    }
    const mine = f.messages.filter((m) => m.stream_id.includes(cr.cr_id)).map((m) => m.type);
    expect(mine).to.deep.equal(['ChangeRequestClosed', 'ChangeRequestReopened']);
    const positions = f.messages.map((m) => m.global_position);
    expect(new Set(positions).size, 'no duplicates').to.equal(positions.length);
  });

  it('delivers an event whose transaction commits late, in (transaction, position) order', async () => {
    const p3 = (await api.post('/v1/projects', { name: 'Late', repo_url: fx.repo.url })).body.project.project_id;
    // The feed alone, on a db that reports every commit-safe read it made and what it returned.
    const reads: { seq: number; rows: number }[] = [];
    let started = 0;
    let readDone: () => void = () => {};
    const observed: Db = {
      ...fx.srv.db.db,
      rows: <R>(q: Query) => {
        const seq = started++;
        const p = fx.srv.db.db.rows<R>(q);
        if (q.text.includes('pg_snapshot_xmin')) {
          void p.then((r) => {
            reads.push({ seq, rows: r.length });
            readDone();
          }, () => {});
        }
        return p;
      },
    };
    const hub = createFeedHub({ reads: feedReads(observed), logger: silentLogger, watchMs: 10, pollMs: 10 });
    const standalone = await standaloneFeed(createEventsFeed({ reads: feedReads(observed), logger: silentLogger, hub }));
    const meta = { actor: fx.srv.userId };
    const c1 = await fx.srv.db.db.connect();
    const c2 = await fx.srv.db.db.connect();
    try {
      const f = await openFeed(standalone.url, `/v1/projects/${p3}/events`);
      open.push(f);
      try {
        // T1 appends first (lower position) but commits after T2.
        await c1.query('BEGIN');
        await append(executor(c1), { streamId: `test-${randomUUID()}`, streamType: 'test', projectId: p3, expectedVersion: 0, events: [{ type: 'Late', data: {} }], metadata: meta });
        await c2.query('BEGIN');
        await append(executor(c2), { streamId: `test-${randomUUID()}`, streamType: 'test', projectId: p3, expectedVersion: 0, events: [{ type: 'Early', data: {} }], metadata: meta });
        await c2.query('COMMIT');
        // Wait for the feed to have read the log after T2 committed (a read issued after this point).
        const mark = started;
        await new Promise<void>((resolve) => {
          readDone = () => reads.some((r) => r.seq >= mark) && resolve();
          readDone();
        });
        expect(reads.filter((r) => r.seq >= mark).map((r) => r.rows), 'nothing passes the still-running older transaction').to.deep.equal(reads.filter((r) => r.seq >= mark).map(() => 0));
        expect(f.messages).to.deep.equal([]);
        await c1.query('COMMIT');
      } finally {
        c1.release();
        c2.release();
      }
      const got = await f.take(2);
      expect(got.map((m) => m.type)).to.deep.equal(['Late', 'Early']);
      expect(got[0]!.global_position).to.be.lessThan(got[1]!.global_position);
    } finally {
      await standalone.close();
    }
  });

  it('delivers a new event to every socket of a fresh project', async () => {
    const owner = client(fx.srv.url, fx.srv.token);
    const p3 = (await owner.post('/v1/projects', { name: 'Fanout', repo_url: fx.repo.url })).body.project.project_id;
    const feeds = await Promise.all([1, 2, 3, 4].map(() => feed(`/v1/projects/${p3}/events`)));
    expect((await owner.post(`/v1/projects/${p3}/change-requests`, { title: 'Fan', head_ref: 'feature' })).status).to.equal(201);
    const got = await Promise.all(feeds.map((f) => f.take(1)));
    expect(got.map((m) => m[0]!.type)).to.deep.equal(Array(4).fill('ChangeRequestOpened'));
    expect(new Set(got.map((m) => m[0]!.global_position)).size).to.equal(1);
  });

  it('closes its sockets (1001) when the server stops', async () => {
    const other = await startTestServer();
    try {
      const f = await openFeed(other.url, `/v1/projects/${(await client(other.url, other.token).post('/v1/projects', { name: 'S', repo_url: fx.repo.url })).body.project.project_id}/events`, other.token);
      const started = Date.now();
      await other.stop();
      const { code } = await f.closed;
      expect(code).to.equal(1001);
      expect(Date.now() - started).to.be.lessThan(5000);
    } catch (err) {
      await other.stop().catch(() => {});
      throw err;
    }
  });

  it('does not buffer without bound for a client that stops reading: closes it with 1013', async () => {
    const p4 = (await api.post('/v1/projects', { name: 'Flood', repo_url: fx.repo.url })).body.project.project_id;
    const blob = 'x'.repeat(4096);
    await fx.srv.db.db.transaction((tx) =>
      append(tx, {
        streamId: `test-${randomUUID()}`, streamType: 'test', projectId: p4, expectedVersion: 0,
        events: Array.from({ length: 4000 }, (_, i) => ({ type: 'Big', data: { i, blob } })), metadata: { actor: fx.srv.userId },
      }),
    );
    // The feed alone, with small limits, behind a stand-in for the auth middleware.
    const feedUnderTest = createEventsFeed({ reads: feedReads(fx.srv.db.db), logger: silentLogger, highWaterBytes: 64 * 1024, stallMs: 300 });
    const standalone = await standaloneFeed(feedUnderTest);
    // The signal: the server side closing a socket with 1013 (ws's own close, observed).
    const proto = WebSocket.prototype as unknown as { close(code?: number, reason?: string): void };
    const realClose = proto.close;
    let decided: () => void = () => {};
    const closedSlow = new Promise<void>((r) => (decided = r));
    proto.close = function (this: WebSocket, code?: number, reason?: string) {
      if (code === 1013) decided();
      return realClose.call(this, code, reason);
    };
    try {
      const f = await openFeed(standalone.url, `/v1/projects/${p4}/events`);
      const socket = (f.ws as unknown as { _socket: { pause(): void; resume(): void } })._socket;
      socket.pause();
      await closedSlow;
      socket.resume();
      const { code } = await f.closed;
      expect(code).to.equal(1013);
      expect(f.messages.length, 'the server stopped reading for it').to.be.lessThan(4000);
    } finally {
      proto.close = realClose;
      await standalone.close();
    }
  });
});
