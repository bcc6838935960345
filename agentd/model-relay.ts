import { randomBytes, timingSafeEqual } from 'node:crypto';
import http from 'node:http';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import type { Logger } from '../lib/logger.js';

/**
 * The runtime's way to the model gateway (docs/agentd.md "Model relay"): the runtime's
 * provider `svc` points at this relay on the sandbox's loopback, with the relay's own key;
 * the relay forwards each request to SVC_LLM_BASE_URL with the session's model key, read
 * at the time of the request. So the runtime's provider state never holds the session's
 * key: a pool sandbox's runtime boots (and warms up) before any session exists, and the
 * claim hands the key to the relay, not to the runtime.
 *
 * - A request without the relay's key: 401 (another local process on an unisolated host).
 * - No session key yet (a pool sandbox before its claim): 503, nothing sent upstream.
 * - A request whose body carries the warm-up nonce (the daemon's own warm-up prompt,
 *   runtime-warmup.ts): 400 at once, nothing sent upstream, so a warm-up never spends a
 *   model call, before or after a claim.
 * Bodies are buffered (capped), responses streamed back as they come (SSE).
 */
export interface ModelRelayOptions {
  /** SVC_LLM_BASE_URL, without a trailing slash: `${SVC_API_URL}/llm`. */
  upstream: string;
  /** The session's model key at the time of the request; undefined before a claim. */
  key: () => string | undefined;
  /** Requests whose body contains this string are the daemon's warm-up: refused locally. */
  warmupNonce: string;
  logger: Logger;
  maxBodyBytes?: number;
}

export interface ModelRelay {
  /** `http://127.0.0.1:<port>`: the runtime's provider base URL. */
  url: string;
  /** The relay's own key, for the runtime's provider config; opens nothing but this relay. */
  token: string;
  close(): Promise<void>;
}

const HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade', 'host', 'authorization', 'content-length', 'te', 'trailer']);

const sendError = (res: http.ServerResponse, status: number, message: string, type: string) => {
  if (res.headersSent) return void res.destroy();
  const body = JSON.stringify({ error: { message, type, code: type } });
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }).end(body);
};

function bearerIs(header: string | undefined, expected: Buffer): boolean {
  const m = /^Bearer (.+)$/.exec(header ?? '');
  if (!m) return false;
  const got = Buffer.from(m[1]!);
  return got.length === expected.length && timingSafeEqual(got, expected);
}

export async function startModelRelay(o: ModelRelayOptions): Promise<ModelRelay> {
  const token = `relay-${randomBytes(24).toString('base64url')}`;
  const expected = Buffer.from(token);
  const base = new URL(o.upstream.replace(/\/+$/, '') + '/');
  const client = base.protocol === 'https:' ? https : http;
  const agent = new client.Agent({ keepAlive: true });
  const nonce = Buffer.from(o.warmupNonce);
  const max = o.maxBodyBytes ?? 64 * 1024 * 1024;

  const server = http.createServer((req, res) => {
    if (!bearerIs(req.headers.authorization, expected)) {
      req.resume();
      return sendError(res, 401, 'The model relay needs its own key.', 'invalid_api_key');
    }
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (c: Buffer) => {
      size += c.length;
      if (size > max) {
        sendError(res, 413, 'The request is larger than the model relay forwards.', 'request_too_large');
        req.destroy();
        return;
      }
      chunks.push(c);
    });
    req.on('error', () => res.destroy());
    req.on('end', () => {
      if (size > max) return;
      const body = Buffer.concat(chunks);
      if (body.includes(nonce)) return sendError(res, 400, 'The daemon warm-up prompt is answered by the relay itself.', 'svc_warmup');
      const key = o.key();
      if (!key) return sendError(res, 503, 'This sandbox has no session yet: there is no model key to call the model with.', 'no_session');
      const headers: http.OutgoingHttpHeaders = {};
      for (const [k, v] of Object.entries(req.headers)) if (!HOP.has(k) && v !== undefined) headers[k] = v;
      headers.authorization = `Bearer ${key}`;
      headers['content-length'] = body.length;
      // The runtime's path (`/chat/completions`, `/models`) under the gateway's base path.
      const target = new URL((req.url ?? '/').replace(/^\/+/, ''), base);
      if (target.origin !== base.origin || !target.pathname.startsWith(base.pathname)) return sendError(res, 400, 'Not a model gateway path.', 'bad_path');
      const up = client.request(target, { method: req.method, headers, agent }, (upRes) => {
        const out: http.OutgoingHttpHeaders = {};
        for (const [k, v] of Object.entries(upRes.headers)) if (!HOP.has(k) && v !== undefined) out[k] = v;
        res.writeHead(upRes.statusCode ?? 502, out);
        upRes.pipe(res);
        upRes.on('error', () => res.destroy());
      });
      up.on('error', (err) => {
        o.logger.warn({ err: err.message }, 'model gateway unreachable');
        sendError(res, 502, `The model gateway did not answer: ${err.message}`, 'bad_gateway');
      });
      res.on('close', () => {
        if (!res.writableFinished) up.destroy();
      });
      up.end(body);
    });
  });
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    token,
    close: () =>
      new Promise<void>((resolve) => {
        agent.destroy();
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
