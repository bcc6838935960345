import http from 'node:http';
import net from 'node:net';
import { expect } from 'chai';
import WebSocket from 'ws';
import { signUserContext } from '../../agentd/auth.js';
import { startDaemon, startFakeRuntime, type DaemonHandle } from './support/harness.js';

/** Proxying through a real `svc-agent`: the signed context, streaming, upgrades. */
describe('svc-agent proxy (e2e)', function () {
  this.timeout(60_000);
  let d: DaemonHandle;
  let app: Awaited<ReturnType<typeof startFakeRuntime>>;

  before(async () => {
    [d, app] = await Promise.all([startDaemon(), startFakeRuntime()]);
    await d.waitForAgent('running');
  });
  after(async () => {
    await Promise.all([d?.stop(), app?.stop()]);
  });

  const get = (path: string, headers: Record<string, string> = {}) => fetch(`${d.url}${path}`, { headers, redirect: 'manual' });
  const now = () => Math.floor(Date.now() / 1000);

  describe('the signed X-Svc-User-Context', () => {
    it('lets a valid context through to the runtime', async () => {
      const r = await get('/global/health', { 'x-svc-user-context': d.sign() });
      expect(r.status).to.equal(200);
      expect(await r.json()).to.deep.equal({ healthy: true, version: 'fake' });
    });

    const refusals: [string, () => Record<string, string>, RegExp][] = [
      ['missing', () => ({}), /required/],
      ['expired', () => ({ 'x-svc-user-context': d.sign({ exp: now() - 1 }) }), /expired/],
      ['bad signature', () => ({ 'x-svc-user-context': d.sign().slice(0, -2) + 'AA' }), /signature/],
      ['signed with another key', () => ({ 'x-svc-user-context': signUserContext('not-the-token-at-all', { sub: 'u', exp: now() + 60 }) }), /signature/],
      ['bound to another port', () => ({ 'x-svc-user-context': d.sign({ port: 1234 }) }), /another port/],
      ['malformed', () => ({ 'x-svc-user-context': 'garbage' }), /malformed/],
      ['the control bearer instead', () => ({ authorization: `Bearer ${d.token}` }), /required/],
    ];
    for (const [name, headers, message] of refusals) {
      it(`refuses a context that is ${name} with 401`, async () => {
        for (const path of ['/global/health', `/proxy/${app.port}/fake/echo`]) {
          const r = await get(path, headers());
          expect(r.status, path).to.equal(401);
          const body = (await r.json()) as { error: string; message: string };
          expect(body.error).to.equal('Unauthorized');
          expect(body.message).to.match(message);
        }
      });
    }

    it('accepts a context bound to the port it reaches', async () => {
      expect((await get('/global/health', { 'x-svc-user-context': d.sign({ port: d.agentPort }) })).status).to.equal(200);
      expect((await get(`/proxy/${app.port}/fake/hello`, { 'x-svc-user-context': d.sign({ port: app.port }) })).status).to.equal(200);
      expect((await get(`/proxy/${app.port}/fake/hello`, { 'x-svc-user-context': d.sign({ port: d.agentPort }) })).status).to.equal(401);
    });

    it('turns ?svc_ctx= into an HttpOnly cookie, strips it before forwarding, then accepts the cookie', async () => {
      const v = d.sign({ port: app.port });
      const first = await get(`/proxy/${app.port}/fake/echo?a=1&svc_ctx=${v}&b=x%20y`);
      expect(first.status).to.equal(200);
      const cookie = first.headers.get('set-cookie')!;
      expect(cookie).to.match(new RegExp(`^svc_ctx=${v.replace('.', '\\.')}; Path=/proxy/${app.port}; Max-Age=\\d+; HttpOnly; SameSite=Lax`));
      const echoed = (await first.json()) as { url: string; headers: Record<string, string> };
      expect(echoed.url).to.equal('/fake/echo?a=1&b=x%20y');
      expect(echoed.headers).to.not.have.any.keys('x-svc-user-context', 'cookie');

      const next = await get(`/proxy/${app.port}/fake/echo`, { cookie: `theme=dark; svc_ctx=${v}` });
      expect(next.status).to.equal(200);
      expect(next.headers.get('set-cookie')).to.equal(null);
      expect(((await next.json()) as { headers: Record<string, string> }).headers.cookie).to.equal('theme=dark');

      expect((await get(`/proxy/${app.port}/fake/echo?svc_ctx=${d.sign({ exp: now() - 5 })}`)).status).to.equal(401);
      expect((await get(`/proxy/${app.port}/fake/echo`, { cookie: 'svc_ctx=forged.value' })).status).to.equal(401);
    });

    it('marks the preview cookie Secure and SameSite=None behind TLS', async () => {
      const r = await get(`/?svc_ctx=${d.sign()}`, { 'x-forwarded-proto': 'https' });
      expect(r.headers.get('set-cookie')).to.match(/; Path=\/; .*HttpOnly; SameSite=None; Secure$/);
    });

    it('never forwards the context, its cookie, or the control bearer; forwards the rest', async () => {
      const r = await get('/fake/echo?x=1', {
        'x-svc-user-context': d.sign(),
        cookie: 'svc_ctx=abc; keep=1',
        'x-custom': 'yes',
      });
      const body = (await r.json()) as { url: string; headers: Record<string, string> };
      expect(body.url).to.equal('/fake/echo?x=1');
      expect(body.headers).to.not.have.any.keys('x-svc-user-context', 'authorization');
      expect(body.headers).to.include({ cookie: 'keep=1', 'x-custom': 'yes', 'x-forwarded-for': '127.0.0.1' });
      const withBearer = await get('/fake/echo', { 'x-svc-user-context': d.sign(), authorization: `Bearer ${d.token}` });
      expect(((await withBearer.json()) as { headers: object }).headers).to.not.have.key('authorization');
    });
  });

  describe('routing', () => {
    it("refuses /proxy to the daemon's own port with 403", async () => {
      const r = await get(`/proxy/${d.port}/svc/health`, { 'x-svc-user-context': d.sign() });
      expect(r.status).to.equal(403);
      expect(((await r.json()) as { error: string }).error).to.equal('Forbidden');
    });

    it('answers 400 for a bad /proxy port and 502 when nothing listens there', async () => {
      expect((await get('/proxy/99999/', { 'x-svc-user-context': d.sign() })).status).to.equal(400);
      const closed = await (async () => {
        const s = net.createServer();
        await new Promise<void>((r) => s.listen(0, '127.0.0.1', () => r()));
        const p = (s.address() as net.AddressInfo).port;
        await new Promise((r) => s.close(r));
        return p;
      })();
      const r = await get(`/proxy/${closed}/x`, { 'x-svc-user-context': d.sign() });
      expect(r.status).to.equal(502);
      expect(((await r.json()) as { error: string }).error).to.equal('Bad gateway');
    });

    it('streams request bodies both ways (POST through /proxy)', async () => {
      const payload = 'z'.repeat(300_000);
      const r = await fetch(`${d.url}/proxy/${app.port}/fake/echo`, {
        method: 'POST',
        headers: { 'x-svc-user-context': d.sign(), 'content-type': 'text/plain' },
        body: payload,
      });
      const body = (await r.json()) as { method: string; body: string };
      expect(body.method).to.equal('POST');
      expect(body.body.length).to.equal(payload.length);
    });
  });

  describe('streaming', () => {
    it('passes SSE through event by event, before the stream ends', async () => {
      const arrivals: { n: number; at: number }[] = [];
      const started = Date.now();
      await new Promise<void>((resolve, reject) => {
        const req = http.get(
          `${d.url}/event?count=4&interval=300`,
          { headers: { 'x-svc-user-context': d.sign(), accept: 'text/event-stream' } },
          (res) => {
            expect(res.statusCode).to.equal(200);
            expect(res.headers['content-type']).to.equal('text/event-stream');
            let buf = '';
            res.setEncoding('utf8');
            res.on('data', (chunk: string) => {
              buf += chunk;
              let i: number;
              while ((i = buf.indexOf('\n\n')) >= 0) {
                const event = JSON.parse(buf.slice(0, i).replace(/^data: /, '')) as { properties: { n: number } };
                arrivals.push({ n: event.properties.n, at: Date.now() - started });
                buf = buf.slice(i + 2);
              }
            });
            res.on('end', resolve);
            res.on('error', reject);
          },
        );
        req.on('error', reject);
      });
      expect(arrivals.map((a) => a.n)).to.deep.equal([0, 1, 2, 3]);
      // Event k is emitted at ~300k ms; a buffering proxy would deliver all at ~1200 ms.
      expect(arrivals[0]!.at).to.be.below(arrivals[3]!.at - 600);
      expect(arrivals[1]!.at).to.be.below(arrivals[3]!.at - 300);
    });

    it('passes WebSocket upgrades to the runtime and to /proxy ports, both directions', async () => {
      for (const path of ['/ws', `/proxy/${app.port}/ws`]) {
        const ws = new WebSocket(`ws://127.0.0.1:${d.port}${path}`, { headers: { 'x-svc-user-context': d.sign() } });
        const messages: string[] = [];
        await new Promise<void>((resolve, reject) => {
          ws.on('message', (m) => {
            messages.push(m.toString());
            if (messages.length === 1) ws.send('ping-1');
            if (messages.length === 2) ws.send(Buffer.from([1, 2, 3]));
            if (messages.length === 3) resolve();
          });
          ws.on('error', reject);
        });
        ws.close();
        const hello = JSON.parse(messages[0]!) as { hello: string; context: unknown };
        expect(hello.hello).to.equal('/ws');
        expect(hello.context).to.equal(null); // the context header is not forwarded
        expect(messages[1]).to.equal('ping-1');
      }
    });

    it('accepts ?svc_ctx= on a WebSocket upgrade (browsers cannot set headers) and strips it', async () => {
      const ws = new WebSocket(`ws://127.0.0.1:${d.port}/proxy/${app.port}/ws?svc_ctx=${d.sign({ port: app.port })}&room=1`);
      const first = await new Promise<string>((resolve, reject) => {
        ws.once('message', (m) => resolve(m.toString()));
        ws.once('error', reject);
      });
      ws.close();
      expect((JSON.parse(first) as { hello: string }).hello).to.equal('/ws?room=1');
    });

    it('refuses an unauthenticated WebSocket upgrade with 401', async () => {
      const status = await new Promise<number>((resolve, reject) => {
        const ws = new WebSocket(`ws://127.0.0.1:${d.port}/ws`);
        ws.on('unexpected-response', (_req, res) => resolve(res.statusCode ?? 0));
        ws.on('open', () => reject(new Error('opened without a context')));
        ws.on('error', () => undefined);
      });
      expect(status).to.equal(401);
    });
  });

  describe('one proxy', () => {
    /** Writes `text` on a fresh connection and reads until the daemon ends it (it must). */
    const exchange = (text: string) =>
      new Promise<{ out: string; closedByServer: boolean }>((resolve) => {
        const s = net.connect(d.port, '127.0.0.1', () => s.write(text));
        let out = '';
        s.on('data', (c) => (out += c.toString('latin1')));
        s.on('end', () => resolve({ out, closedByServer: true }));
        s.on('error', () => resolve({ out, closedByServer: false }));
      });

    it('a connection that carried a control request closes after it: a pipelined proxied request is never proxied by the http server', async () => {
      const ctx = d.sign();
      const { out, closedByServer } = await exchange(
        `GET /svc/health HTTP/1.1\r\nHost: x\r\n\r\nGET /fake/hello HTTP/1.1\r\nHost: x\r\nX-Svc-User-Context: ${ctx}\r\n\r\n`,
      );
      expect(closedByServer).to.equal(true);
      const answers = out.split(/(?=HTTP\/1\.1 \d{3} )/);
      expect(answers).to.have.length(1);
      expect(answers[0]).to.match(/^HTTP\/1.1 200/).and.match(/\r\nconnection: close\r\n/i);
      // The same request on a connection of its own goes through the raw proxy.
      const again = await get('/fake/hello', { 'x-svc-user-context': ctx });
      expect(again.status).to.equal(200);
    });

    it('a refusal closes its connection; an authorized request the raw proxy does not carry (HTTP/1.0) is 505, never forwarded', async () => {
      const refused = await exchange(`GET /fake/hello HTTP/1.1\r\nHost: x\r\n\r\nGET /fake/hello HTTP/1.1\r\nHost: x\r\nX-Svc-User-Context: ${d.sign()}\r\n\r\n`);
      expect(refused.closedByServer).to.equal(true);
      expect(refused.out.split(/(?=HTTP\/1\.1 \d{3} )/)).to.have.length(1);
      expect(refused.out).to.match(/^HTTP\/1.1 401/);
      const old = await exchange(`GET /fake/hello HTTP/1.0\r\nHost: x\r\nX-Svc-User-Context: ${d.sign()}\r\n\r\n`);
      expect(old.out).to.match(/^HTTP\/1.1 505/);
      expect(old.out).to.not.include('fake');
    });
  });

  describe('hostile input', () => {
    it('survives malformed requests and keeps serving', async () => {
      const raw = async (text: string) =>
        new Promise<string>((resolve) => {
          const s = net.connect(d.port, '127.0.0.1', () => s.end(text));
          let out = '';
          s.on('data', (c) => (out += c.toString()));
          s.on('close', () => resolve(out));
          s.on('error', () => resolve(out));
        });
      await raw('GARBAGE\r\n\r\n');
      await raw('GET http://elsewhere/x HTTP/1.1\r\nHost: x\r\n\r\n');
      await raw(`GET /proxy/${app.port}/x HTTP/1.1\r\nHost: x\r\nX-Svc-User-Context: ${d.sign()}\r\nContent-Length: 10\r\n\r\nab`);
      await raw('GET /svc/health HTTP/1.1\r\nHost: x\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n');
      const smuggled = await raw('GET /%ZZ HTTP/1.1\r\nHost: x\r\nX-Svc-User-Context: a.b.c\r\n\r\n');
      expect(smuggled).to.match(/^HTTP\/1.1 401/);
      const viaPath = await raw('GET //proxy/1/../../svc HTTP/1.1\r\nHost: x\r\n\r\n');
      expect(viaPath).to.match(/^HTTP\/1.1 401/);
      // A client that disconnects mid-stream must not hurt the daemon either.
      await new Promise<void>((resolve) => {
        const req = http.get(`${d.url}/event?count=50&interval=20`, { headers: { 'x-svc-user-context': d.sign() } }, (res) => {
          res.once('data', () => {
            req.destroy();
            resolve();
          });
        });
        req.on('error', () => undefined);
      });
      const h = await d.health();
      expect(h.daemon).to.equal('ok');
      expect(d.child.exitCode).to.equal(null);
    });
  });
});
