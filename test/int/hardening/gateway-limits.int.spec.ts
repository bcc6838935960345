import { expect } from 'chai';
import net from 'node:net';
import path from 'node:path';
import { client, gatewayUrl } from '../../support/http.js';
import { agentReady, waitForStatus, withSessionProject, type SessionProject } from '../../support/sessions.js';
import { eventually, until } from '../../support/wait.js';

/**
 * A sandbox's share of the server, as the sandbox itself would spend it: its gateway
 * socket is dialled directly (the door its processes use). Caps are small here so the
 * test reaches them quickly; each refusal falls on that sandbox while a second sandbox's
 * requests through its own gateway keep answering.
 */
const MAX_CONNECTIONS = 20;
const MAX_REQUESTS = 4;
const RATE = 40;

interface Sandbox {
  id: string;
  socket: string;
  /** Its clone credential, `user:password`. */
  basic: string;
  api: ReturnType<typeof client>;
}

async function sandboxOf(p: SessionProject): Promise<Sandbox> {
  const s = (await p.api.post(p.sessions, {})).body.session;
  const running = await waitForStatus(p.api, `${p.sessions}/${s.session_id}`, ['running']);
  const env = (await agentReady(p.api, `${p.sessions}/${s.session_id}/agent/fake/state`)).body.env as Record<string, string>;
  const id = running.sandbox.sandbox_id as string;
  const cred = await client(gatewayUrl(p.srv.dataDir, id), env.SVC_TOKEN!).get(`/v1/projects/${env.SVC_PROJECT_ID}/git/clone-credential`);
  expect(cred.status, JSON.stringify(cred.body)).to.equal(200);
  return { id, socket: path.join(p.srv.dataDir, 'sandboxes', id, 'gw', 'gateway.sock'), basic: `${cred.body.username}:${cred.body.password}`, api: client(gatewayUrl(p.srv.dataDir, id), env.SVC_CLI_TOKEN!) };
}

/** `n` raw connections to a socket; each records whether the server closed it. */
function connections(socketPath: string, n: number): { sockets: net.Socket[]; closed: () => number; opened: Promise<void> } {
  let closed = 0;
  const sockets: net.Socket[] = [];
  const all: Promise<void>[] = [];
  for (let i = 0; i < n; i++) {
    const s = net.connect({ path: socketPath });
    sockets.push(s);
    all.push(new Promise<void>((r) => {
      s.once('connect', () => r());
      s.once('error', () => r());
    }));
    s.on('error', () => {});
    s.once('close', () => closed++);
  }
  return { sockets, closed: () => closed, opened: Promise.all(all).then(() => undefined) };
}

/** A smart-HTTP upload-pack whose body never finishes: one request in flight until the socket goes. */
function hangingRequest(sb: Sandbox, slug: string): net.Socket {
  const s = net.connect({ path: sb.socket });
  s.on('error', () => {});
  const auth = Buffer.from(sb.basic).toString('base64');
  s.write(`POST /git/${slug}.git/git-upload-pack HTTP/1.1\r\nhost: gw\r\nauthorization: Basic ${auth}\r\ncontent-type: application/x-git-upload-pack-request\r\ncontent-length: 100000\r\n\r\n0032want `);
  return s;
}

describe("a sandbox's connections, requests and rate on its gateway are bounded, for itself only", function () {
  this.timeout(120_000);
  const env = { SVC_SANDBOX_MAX_CONNECTIONS: String(MAX_CONNECTIONS), SVC_SANDBOX_MAX_REQUESTS: String(MAX_REQUESTS), SVC_SANDBOX_MAX_REQUEST_RATE: String(RATE) };

  it('gateway connections past the cap are closed as they are accepted; the other sandbox keeps answering; freed, the flooding sandbox is served again', () =>
    withSessionProject({ slug: 'gw-conns', env }, async (p) => {
      const [a, b] = [await sandboxOf(p), await sandboxOf(p)];
      const flood = connections(a.socket, 400);
      await flood.opened;
      // The sandbox's own daemon may hold a connection or two of its cap already.
      await until(() => flood.closed() >= 400 - MAX_CONNECTIONS, `the server closes all but ${MAX_CONNECTIONS} of 400`);
      expect(400 - flood.closed()).to.be.within(MAX_CONNECTIONS - 3, MAX_CONNECTIONS);
      // At its cap, the sandbox's next request finds no connection; the other's is served.
      expect(await a.api.get('/v1/projects').then((r) => r.status, () => 'refused')).to.equal('refused');
      expect((await b.api.get('/v1/projects')).status).to.equal(200);
      for (const s of flood.sockets) s.destroy();
      await eventually(async () => (await a.api.get('/v1/projects').then((r) => r.status, () => 0)) === 200, 'the sandbox is served once its connections close', { timeoutMs: 10_000 });
    }));

  it('requests in flight past the cap: 429 with Retry-After for that sandbox; the other sandbox keeps answering', () =>
    withSessionProject({ slug: 'gw-inflight', env }, async (p) => {
      const [a, b] = [await sandboxOf(p), await sandboxOf(p)];
      const hanging = Array.from({ length: MAX_REQUESTS }, () => hangingRequest(a, 'gw-inflight'));
      try {
        const over = await eventually(async () => {
          const r = await a.api.get('/v1/projects');
          return r.status === 429 ? r : null;
        }, 'the fifth request refused', { timeoutMs: 10_000 });
        expect(over.body.error).to.equal('Too many requests');
        expect(over.body.message).to.match(/in flight/);
        expect(Number(over.headers.get('retry-after'))).to.be.at.least(1);
        expect((await b.api.get('/v1/projects')).status).to.equal(200);
      } finally {
        for (const s of hanging) s.destroy();
      }
      await eventually(async () => (await a.api.get('/v1/projects')).status === 200, 'served again once its requests end', { timeoutMs: 10_000 });
    }));

  it('a request flood past the rate: 429 with Retry-After for that sandbox; the other sandbox keeps answering', () =>
    withSessionProject({ slug: 'gw-rate', env }, async (p) => {
      const [a, b] = [await sandboxOf(p), await sandboxOf(p)];
      // Refusals are held a second on their connection: past the connection cap, a flood's
      // further connections are closed (reset), which is a refusal too.
      const statuses: Array<number | 'reset'> = [];
      let retryAfter: string | null = null;
      const get = () =>
        a.api.get('/v1/projects').then(
          (r) => {
            if (r.status === 429 && /per second/.test(r.body.message)) retryAfter = r.headers.get('retry-after');
            return r.status;
          },
          () => 'reset' as const,
        );
      // 3 at a time (under the in-flight cap), 40 per second allowed with bursts of 80: a fast flood passes it.
      for (let i = 0; i < 40; i++) statuses.push(...(await Promise.all([get(), get(), get()])));
      expect(statuses.filter((s) => s === 429).length, statuses.join(',')).to.be.greaterThan(0);
      expect(statuses.every((s) => s === 200 || s === 429 || s === 'reset'), statuses.join(',')).to.equal(true);
      expect(Number(retryAfter), statuses.join(',')).to.be.at.least(1);
      expect((await b.api.get('/v1/projects')).status).to.equal(200);
    }));
});
