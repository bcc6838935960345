import { expect } from 'chai';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { startModelRelay, type ModelRelay } from '../../agentd/model-relay.js';
import { silentLogger } from '../../lib/logger.js';

/**
 * The daemon's model relay (agentd/model-relay.ts), attacked as a local process without
 * its key, a pool sandbox before its claim and a warm-up turn, and used as the runtime
 * uses it: the session's key added per request, streams passed on as they come.
 */
interface Seen {
  path: string;
  auth: string | undefined;
  body: string;
}

describe('model relay (agentd)', () => {
  let upstream: http.Server;
  let seen: Seen[];
  let release: (() => void) | undefined;
  let relay: ModelRelay;
  const key = { value: undefined as string | undefined };
  const NONCE = 'svc-warmup-0123456789abcdef';

  before(async () => {
    seen = [];
    upstream = http.createServer((req, res) => {
      let body = '';
      req.on('data', (d) => (body += d));
      req.on('end', () => {
        seen.push({ path: req.url ?? '', auth: req.headers.authorization, body });
        if (req.url?.endsWith('/stream')) {
          // One chunk, then the end only when the test has read that chunk.
          res.writeHead(200, { 'content-type': 'text/event-stream' });
          res.write('data: first\n\n');
          release = () => res.end('data: [DONE]\n\n');
          return;
        }
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ ok: true, path: req.url }));
      });
    });
    await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
    const { port } = upstream.address() as AddressInfo;
    relay = await startModelRelay({ upstream: `http://127.0.0.1:${port}/v1/llm/`, key: () => key.value, warmupNonce: NONCE, logger: silentLogger });
  });
  after(async () => {
    await relay.close();
    await new Promise((r) => upstream.close(r));
  });
  beforeEach(() => {
    seen.length = 0;
    key.value = 'svc_llm_session_one';
  });

  const post = (path: string, body: string, auth: string | null = `Bearer ${relay.token}`) =>
    fetch(`${relay.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json', ...(auth ? { authorization: auth } : {}) }, body });

  it("refuses a caller without the relay's own key (another local process): nothing goes upstream", async () => {
    for (const auth of [null, 'Bearer svc_llm_session_one', `Bearer ${relay.token}x`, `Basic ${relay.token}`]) {
      const r = await post('/chat/completions', '{}', auth);
      expect(r.status, String(auth)).to.equal(401);
      expect((await r.json() as any).error.code).to.equal('invalid_api_key');
    }
    expect(seen).to.deep.equal([]);
  });

  it('forwards to the gateway with the session key read per request, never the relay key', async () => {
    const r = await post('/chat/completions', '{"model":"m"}');
    expect(r.status).to.equal(200);
    expect(await r.json()).to.deep.equal({ ok: true, path: '/v1/llm/chat/completions' });
    key.value = 'svc_llm_session_two';
    expect((await post('/chat/completions', '{"model":"m"}')).status).to.equal(200);
    expect(seen.map((s) => s.auth)).to.deep.equal(['Bearer svc_llm_session_one', 'Bearer svc_llm_session_two']);
    expect(seen.map((s) => s.body)).to.deep.equal(['{"model":"m"}', '{"model":"m"}']);
    expect(JSON.stringify(seen)).to.not.include(relay.token);
  });

  it('answers 503 with nothing sent upstream while the sandbox has no session key (a pool sandbox before its claim)', async () => {
    key.value = undefined;
    const r = await post('/chat/completions', '{"model":"m"}');
    expect(r.status).to.equal(503);
    expect((await r.json() as any).error.code).to.equal('no_session');
    expect(seen).to.deep.equal([]);
  });

  it('answers the warm-up turn itself (400), before and after a claim: a warm-up never spends a model call', async () => {
    for (const k of [undefined, 'svc_llm_session_one']) {
      key.value = k;
      const r = await post('/chat/completions', JSON.stringify({ messages: [{ role: 'user', content: `x ${NONCE} y` }] }));
      expect(r.status).to.equal(400);
      expect((await r.json() as any).error.code).to.equal('svc_warmup');
    }
    expect(seen).to.deep.equal([]);
  });

  it('keeps to the gateway: a path that climbs out of its base is refused', async () => {
    const r = await new Promise<number>((resolve, reject) => {
      const req = http.request(`${relay.url}/../../admin`, { method: 'POST', headers: { authorization: `Bearer ${relay.token}` } }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      });
      req.on('error', reject);
      req.path = '/../../admin';
      req.end('{}');
    });
    expect(r).to.equal(400);
    expect(seen).to.deep.equal([]);
  });

  it('passes a stream on chunk by chunk (the first event arrives before the upstream ends)', async () => {
    const r = await post('/stream', '{"stream":true}');
    expect(r.headers.get('content-type')).to.equal('text/event-stream');
    const reader = r.body!.getReader();
    const first = new TextDecoder().decode((await reader.read()).value);
    expect(first).to.equal('data: first\n\n');
    release!();
    let rest = '';
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      rest += new TextDecoder().decode(value);
    }
    expect(rest).to.equal('data: [DONE]\n\n');
  });

  it('says why when the gateway cannot be reached (502)', async () => {
    const dead = await startModelRelay({ upstream: 'http://127.0.0.1:9/v1/llm', key: () => 'k', warmupNonce: NONCE, logger: silentLogger });
    try {
      const r = await fetch(`${dead.url}/chat/completions`, { method: 'POST', headers: { authorization: `Bearer ${dead.token}` }, body: '{}' });
      expect(r.status).to.equal(502);
      expect((await r.json() as any).error.message).to.match(/did not answer/);
    } finally {
      await dead.close();
    }
  });
});
