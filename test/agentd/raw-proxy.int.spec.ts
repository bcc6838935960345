import { expect } from 'chai';
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { signUserContext } from '../../agentd/auth.js';
import { DaemonListener } from '../../agentd/raw-proxy/listener.js';
import { UpstreamPool } from '../../agentd/raw-proxy/upstream-pool.js';
import { silentLogger } from '../../lib/logger.js';
import { measuredDownload } from './support/download.js';

const TOKEN = 't'.repeat(32);
const listen = async (s: net.Server): Promise<number> => {
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  return (s.address() as AddressInfo).port;
};
const tick = () => new Promise((r) => setImmediate(r));

/**
 * The raw proxy in process, against a Node upstream (counting its connections and
 * requests) and a hand-written one (for framings Node would not produce): pipelining,
 * chunked bodies in any pieces, bodiless responses, close-delimited responses, upgrades,
 * refused smuggling attempts, teardown on client disconnect, upstream reuse, and a
 * 100 MB download with bounded memory.
 */
// Both ways of reading client connections: onread on the taken-over handle, and 'data'
// events (what a Node release that hides the handle gets).
for (const readWith of ['onread', 'events'] as const)
describe(`agentd raw proxy (in process, client reads by ${readWith})`, function () {
  this.timeout(60_000);
  const counts = { connections: 0, requests: 0 };
  const streamClosed: (() => void)[] = [];
  let upstream: http.Server;
  let upPort: number;
  let rawUp: net.Server;
  let rawPort: number;
  let rawScript: (socket: net.Socket, request: string) => void = () => undefined;
  let front: DaemonListener;
  let frontPort: number;
  let pool: UpstreamPool;
  const TOTAL = 100 * 1024 * 1024;

  before(async () => {
    upstream = http.createServer((req, res) => {
      counts.requests++;
      const url = new URL(req.url!, 'http://x');
      if (url.pathname === '/echo') {
        const chunks: Buffer[] = [];
        req.on('data', (c: Buffer) => chunks.push(c));
        req.on('end', () => {
          const text = JSON.stringify({ method: req.method, url: req.url, headers: req.headers, body: Buffer.concat(chunks).toString() });
          res.writeHead(200, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text) }).end(text);
        });
        return;
      }
      if (url.pathname === '/status') return void res.writeHead(Number(url.searchParams.get('s')), { 'content-length': '5', etag: '"e"' }).end();
      if (url.pathname === '/head') return void res.writeHead(200, { 'content-length': '5' }).end(req.method === 'HEAD' ? undefined : 'hello');
      if (url.pathname === '/stream') {
        res.writeHead(200, { 'content-type': 'application/octet-stream' });
        const chunk = Buffer.alloc(64 * 1024, 1);
        const pump = () => {
          while (!res.destroyed && res.write(chunk));
          if (!res.destroyed) res.once('drain', pump);
        };
        res.on('close', () => streamClosed.shift()?.());
        return pump();
      }
      if (url.pathname === '/big') {
        res.writeHead(200, { 'content-length': String(TOTAL) });
        const chunk = Buffer.alloc(256 * 1024, 7);
        let sent = 0;
        const pump = () => {
          while (sent < TOTAL) {
            sent += chunk.length;
            if (!res.write(chunk)) return void res.once('drain', pump);
          }
          res.end();
        };
        return pump();
      }
      res.writeHead(404, { 'content-length': '0' }).end();
    });
    upstream.on('connection', () => counts.connections++);
    upPort = await listen(upstream);
    rawUp = net.createServer((socket) => {
      let got = '';
      socket.on('data', (c) => {
        got += c.toString('latin1');
        const end = got.indexOf('\r\n\r\n');
        if (end >= 0 && got !== '') {
          const head = got.slice(0, end);
          got = got.slice(end + 4);
          rawScript(socket, head + '\r\n\r\n' + got);
          got = '';
        }
      });
      socket.on('error', () => undefined);
    });
    rawPort = await listen(rawUp);
    pool = new UpstreamPool();
    const handedOff = http.createServer((req, res) => {
      req.resume();
      res.writeHead(299, { 'content-length': '6' }).end('handed');
    });
    front = new DaemonListener(handedOff, {
      token: TOKEN,
      runtimePort: upPort,
      ownPort: 1,
      agentState: () => 'running',
      now: () => Math.floor(Date.now() / 1000),
      pool,
      logger: silentLogger,
      isLocal: (t) => t.startsWith('/svc'),
      readWith,
    });
    frontPort = await listen(front.server);
  });
  after(async () => {
    front.close();
    pool.close();
    await new Promise((r) => upstream.close(r));
    upstream.closeAllConnections();
    await new Promise((r) => rawUp.close(r));
  });

  const ctx = signUserContext(TOKEN, { sub: 'u', exp: Math.floor(Date.now() / 1000) + 600 });
  const get = (path: string, extra = '') => `GET ${path} HTTP/1.1\r\nHost: sandbox\r\nX-Svc-User-Context: ${ctx}\r\n${extra}\r\n`;

  /** Writes the pieces one event-loop turn apart; resolves with all the bytes read once `done` says so or the server closes. */
  function exchange(pieces: (string | Buffer)[], done: (out: string) => boolean = () => false): Promise<{ out: string; closed: boolean; socket: net.Socket }> {
    return new Promise((resolve, reject) => {
      const socket = net.connect(frontPort, '127.0.0.1');
      let out = '';
      let settled = false;
      const finish = (closed: boolean) => {
        if (settled) return;
        settled = true;
        resolve({ out, closed, socket });
      };
      socket.on('data', (c) => {
        out += c.toString('latin1');
        if (done(out)) finish(false);
      });
      socket.on('close', () => finish(true));
      socket.on('error', reject);
      void (async () => {
        for (const p of pieces) {
          if (socket.destroyed) return;
          socket.write(p);
          await tick();
        }
      })();
    });
  }
  const responses = (out: string) => out.split(/(?=HTTP\/1\.1 \d{3} )/);
  const bodyOf = (res: string) => res.slice(res.indexOf('\r\n\r\n') + 4);

  it('answers pipelined requests in order, over one upstream connection', async () => {
    const before = { ...counts };
    const { out, closed } = await exchange([get(`/proxy/${upPort}/echo?n=1`) + get(`/proxy/${upPort}/echo?n=2`) + get(`/proxy/${upPort}/echo?n=3`, 'Connection: close\r\n')]);
    expect(closed).to.equal(true);
    const urls = responses(out).map((r) => (JSON.parse(bodyOf(r)) as { url: string }).url);
    expect(urls).to.deep.equal(['/echo?n=1', '/echo?n=2', '/echo?n=3']);
    expect(responses(out)[2]).to.match(/\r\nconnection: close\r\n/);
    expect(counts.requests - before.requests).to.equal(3);
    expect(counts.connections - before.connections).to.be.at.most(1);
    // Requests followed by the client's FIN (half-close): every one answered, then the close.
    const halfClosed = await new Promise<string>((resolve, reject) => {
      let text = '';
      const s = net.connect(frontPort, '127.0.0.1', () => s.end(get(`/proxy/${upPort}/echo?n=4`) + get(`/proxy/${upPort}/echo?n=5`)));
      s.on('data', (c) => (text += c.toString('latin1')));
      s.on('close', () => resolve(text));
      s.on('error', reject);
    });
    expect(responses(halfClosed).map((r) => (JSON.parse(bodyOf(r)) as { url: string }).url)).to.deep.equal(['/echo?n=4', '/echo?n=5']);
  });

  it('reuses kept-alive upstream connections across requests and client connections', async () => {
    await exchange([get(`/proxy/${upPort}/echo`, 'Connection: close\r\n')]); // warm one connection
    const before = counts.connections;
    for (let i = 0; i < 10; i++) {
      const { out } = await exchange([get(`/proxy/${upPort}/echo?i=${i}`, 'Connection: close\r\n')]);
      expect(out).to.match(/^HTTP\/1\.1 200 /);
    }
    expect(counts.connections - before).to.equal(0);
    expect(pool.idleCount(upPort)).to.equal(1);
  });

  it('forwards the rewritten head: credentials and hop-by-hop headers out, X-Forwarded-* in', async () => {
    const extra = `Cookie: a=1\r\nCookie: svc_ctx=${ctx}; b=2\r\nAuthorization: Bearer ${TOKEN}\r\nConnection: keep-alive, x-hop\r\nX-Hop: 1\r\nX-Forwarded-For: 10.1.1.1\r\nX-Keep: yes\r\nConnection: close\r\n`;
    const { out } = await exchange([get(`/proxy/${upPort}/echo?svc_ctx=zzz&q=1`, extra)]);
    const echoed = JSON.parse(bodyOf(out)) as { url: string; headers: Record<string, string> };
    expect(echoed.url).to.equal('/echo?q=1');
    expect(echoed.headers).to.not.have.any.keys('x-svc-user-context', 'authorization', 'x-hop');
    expect(echoed.headers).to.include({ cookie: 'a=1; b=2', 'x-keep': 'yes', host: 'sandbox', 'x-forwarded-for': '10.1.1.1, 127.0.0.1', 'x-forwarded-host': 'sandbox', 'x-forwarded-proto': 'http' });
  });

  it('streams a chunked request body split at every byte boundary', async () => {
    const body = '4\r\nwiki\r\n5;x=y\r\npedia\r\n0\r\nT: 1\r\n\r\n';
    // Connection naming Transfer-Encoding must not drop it (the upstream would read the body as a request).
    const head = `POST /proxy/${upPort}/echo HTTP/1.1\r\nHost: x\r\nX-Svc-User-Context: ${ctx}\r\nTransfer-Encoding: chunked\r\nConnection: close, transfer-encoding\r\n\r\n`;
    const whole = head + body;
    for (let i = head.length - 3; i < whole.length; i++) {
      const { out } = await exchange([whole.slice(0, i), whole.slice(i)]);
      expect(JSON.parse(bodyOf(out)), `split at ${i}`).to.deep.include({ method: 'POST', body: 'wikipedia' });
    }
    const { out } = await exchange([...whole].map((c) => c));
    expect((JSON.parse(bodyOf(out)) as { body: string }).body).to.equal('wikipedia');
  });

  it('passes a chunked response sent byte by byte, then serves the next request on the same connections', async () => {
    const wire = 'HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\nConnection: keep-alive\r\nKeep-Alive: timeout=5\r\n\r\n3\r\nabc\r\n2;e=1\r\nde\r\n0\r\n\r\n';
    let served = 0;
    rawScript = (socket) => {
      served++;
      void (async () => {
        for (const c of wire) {
          socket.write(c);
          await tick();
        }
      })();
    };
    const { out, closed } = await exchange([get(`/proxy/${rawPort}/a`) + get(`/proxy/${rawPort}/b`, 'Connection: close\r\n')]);
    expect(closed).to.equal(true);
    const [first, second] = responses(out);
    expect(first).to.match(/^HTTP\/1\.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n3\r\nabc\r\n2;e=1\r\nde\r\n0\r\n\r\n$/i);
    expect(second).to.match(/\r\nconnection: close\r\n\r\n3\r\nabc/);
    expect(served).to.equal(2);
  });

  it('sends no body for HEAD, 204 and 304 and keeps the connection usable', async () => {
    const { out } = await exchange([
      `HEAD /proxy/${upPort}/head HTTP/1.1\r\nHost: x\r\nX-Svc-User-Context: ${ctx}\r\n\r\n` +
        get(`/proxy/${upPort}/status?s=204`) +
        get(`/proxy/${upPort}/status?s=304`) +
        get(`/proxy/${upPort}/head`, 'Connection: close\r\n'),
    ]);
    const r = responses(out);
    expect(r.map((x) => x.slice(9, 12))).to.deep.equal(['200', '204', '304', '200']);
    expect(r.slice(0, 3).map(bodyOf)).to.deep.equal(['', '', '']);
    expect(bodyOf(r[3]!)).to.equal('hello');
  });

  it('relays a close-delimited response and closes the client connection after it', async () => {
    rawScript = (socket) => socket.end('HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n\r\nuntil the end');
    const { out, closed } = await exchange([get(`/proxy/${rawPort}/x`)]);
    expect(closed).to.equal(true);
    expect(out).to.match(/\r\nconnection: close\r\n\r\nuntil the end$/);
  });

  it('tunnels an upgrade both ways, bytes sent with the request included', async () => {
    rawScript = (socket, request) => {
      expect(request).to.match(/\r\nconnection: Upgrade\r\nupgrade: websocket\r\n/);
      socket.write('HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n');
      socket.write(`[${request.slice(request.indexOf('\r\n\r\n') + 4)}]`);
      socket.removeAllListeners('data');
      socket.on('data', (c) => socket.write(`[${c.toString()}]`));
    };
    const up = `GET /proxy/${rawPort}/ws HTTP/1.1\r\nHost: x\r\nX-Svc-User-Context: ${ctx}\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\nearly`;
    const first = await exchange([up], (o) => o.includes('[early]'));
    expect(first.out).to.match(/^HTTP\/1\.1 101 Switching Protocols\r\n/);
    const echoed = new Promise<string>((r) => first.socket.once('data', (c) => r(c.toString())));
    first.socket.write('more');
    expect(await echoed).to.equal('[more]');
    first.socket.destroy();
  });

  const smuggling: [string, string][] = [
    ['Content-Length with Transfer-Encoding', 'Content-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n\r\n'],
    ['two Content-Lengths', 'Content-Length: 3\r\nContent-Length: 5\r\n\r\nabc'],
    ['a negative Content-Length', 'Content-Length: -3\r\n\r\nabc'],
    ['a huge Content-Length', 'Content-Length: 1000000000000000000000\r\n\r\nabc'],
    ['a bad chunk size', 'Transfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n'],
    ['an obfuscated transfer coding', 'Transfer-Encoding: xchunked\r\n\r\n0\r\n\r\n'],
    ['a folded header', 'X-A: 1\r\n Transfer-Encoding: chunked\r\n\r\n'],
  ];
  for (const [name, rest] of smuggling) {
    it(`answers ${name} with 400 and closes, before anything reaches the upstream`, async () => {
      const before = counts.requests;
      const opened = pool.opened;
      const { out, closed } = await exchange([`POST /proxy/${upPort}/echo HTTP/1.1\r\nHost: x\r\nX-Svc-User-Context: ${ctx}\r\n${rest}GET /proxy/${upPort}/echo HTTP/1.1\r\n\r\n`]);
      expect(out).to.match(/^HTTP\/1\.1 400 Bad Request\r\n/);
      expect(responses(out)).to.have.length(1);
      expect(closed).to.equal(true);
      expect(counts.requests).to.equal(before);
      expect(pool.opened).to.equal(opened);
    });
  }

  it('tears the upstream down when the client leaves mid-download (never back to the pool)', async () => {
    const idle = pool.idleCount(upPort);
    const upstreamGone = new Promise<void>((r) => streamClosed.push(r));
    const { socket } = await exchange([get(`/proxy/${upPort}/stream`)], (o) => o.length > 100_000);
    socket.destroy();
    await upstreamGone;
    expect(pool.idleCount(upPort)).to.equal(Math.max(0, idle - 1)); // the download took one; it never came back
  });

  it('says a bodiless request again on a fresh connection when a kept-alive one dies before answering', async () => {
    const answered = new WeakSet<net.Socket>();
    let dropped = 0;
    rawScript = (socket) => {
      if (answered.has(socket)) {
        dropped++;
        return void socket.destroy(); // the upstream's keep-alive timeout, just as the request came
      }
      answered.add(socket);
      socket.write('HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok');
    };
    const first = await exchange([get(`/proxy/${rawPort}/a`, 'Connection: close\r\n')]);
    expect(first.out).to.match(/^HTTP\/1\.1 200 OK\r\n/);
    const opened = pool.opened;
    const second = await exchange([get(`/proxy/${rawPort}/b`, 'Connection: close\r\n')]);
    expect(second.out).to.match(/^HTTP\/1\.1 200 OK\r\n[^]*\r\n\r\nok$/);
    expect(dropped).to.equal(1);
    expect(pool.opened - opened).to.equal(1);
  });

  it('answers 502 with the http path body when nothing listens', async () => {
    const s = net.createServer();
    const port = await listen(s);
    await new Promise((r) => s.close(r));
    const { out, closed } = await exchange([get(`/proxy/${port}/x`)]);
    expect(out).to.match(/^HTTP\/1\.1 502 Bad Gateway\r\n/);
    expect(JSON.parse(bodyOf(out))).to.deep.equal({ error: 'Bad gateway', message: `Nothing answered on port ${port}.` });
    expect(closed).to.equal(true);
  });

  it('hands requests it does not serve (no context, control surface, HTTP/1.0) to the http server', async () => {
    for (const head of [`GET /proxy/${upPort}/echo HTTP/1.1\r\nHost: x\r\n\r\n`, 'GET /svc/health HTTP/1.1\r\nHost: x\r\n\r\n', `GET /proxy/${upPort}/echo HTTP/1.0\r\nX-Svc-User-Context: ${ctx}\r\n\r\n`]) {
      const { out } = await exchange([head], (o) => o.endsWith('handed'));
      expect(out, head).to.match(/^HTTP\/1\.1 299 /);
    }
    // After a proxied request too, at the request boundary.
    const { out } = await exchange([get(`/proxy/${upPort}/head`) + 'GET /svc/x HTTP/1.1\r\nHost: x\r\n\r\n'], (o) => o.endsWith('handed'));
    expect(responses(out).map((r) => r.slice(9, 12))).to.deep.equal(['200', '299']);
  });

  it('streams a 100 MB download with memory bounded well below its size', async () => {
    const { received, peak, headers } = await measuredDownload(frontPort, `/proxy/${upPort}/big`, { 'x-svc-user-context': ctx });
    expect(headers['content-length']).to.equal(String(TOTAL));
    expect(received).to.equal(TOTAL);
    expect(peak, 'buffers in memory stay below the body size').to.be.below(TOTAL * 0.5);
  });
});
