import http from 'node:http';
import net from 'node:net';
import type { Duplex } from 'node:stream';
import type { Logger } from '../../lib/logger.js';
import type { EgressDecision, EgressList, EgressPolicy } from './policy.js';

/**
 * The sandboxes' HTTP(S) forward proxy: `CONNECT host:port` (https and any TLS: the bytes
 * are tunnelled, never decrypted) and absolute-form `GET http://host/path` (plain http).
 * One instance serves every sandbox: the server accepts a connection on a sandbox's
 * gateway and hands the socket over with the sandbox's identity (`handle(socket, id)`);
 * the identity travels in-process, never in a header (Proxy-Authorization is dropped).
 *
 * Every connection is decided by `policy` against the project's egress list in force
 * at that moment (`rulesFor`), and goes to the address the policy checked (pinned): no
 * second resolution. A refusal is a 403 with one line a person can read, and is reported
 * to `onRefused` (which keeps the session's history from flooding). Bounded: client
 * sockets and upstream connections per sandbox, a deadline for the first request, idle
 * timeouts both ways, a connect timeout; bodies are streamed with backpressure, never
 * buffered.
 */
export interface EgressIdentity {
  sandboxId: string;
  projectId: string;
}

export interface EgressProxyOptions {
  policy: EgressPolicy;
  /** The `[sandbox] egress` list in force for the sandbox's project (null: the key is absent). */
  rulesFor: (id: EgressIdentity) => Promise<EgressList>;
  onRefused?: (id: EgressIdentity, refusal: Extract<EgressDecision, { ok: false }>) => void;
  logger: Logger;
  /** Per sandbox: open client sockets, and open upstream connections (default 128 each). */
  maxConnectionsPerSandbox?: number;
  /** The server's descriptor budget, asked before each upstream connection (false: 503 for that one). */
  admitFd?: () => boolean;
  /** No byte either way for this long ends a connection (default 120 s). */
  idleMs?: number;
  /** A client connection must send its first request head within this (default 15 s). */
  headersTimeoutMs?: number;
  connectTimeoutMs?: number;
  /**
   * Opens the TCP connection to an address the policy checked (default: net.connect).
   * Tests record what is dialed here; it never sees an address the policy refused.
   */
  dial?: (address: string, port: number) => net.Socket;
}

export interface EgressProxy {
  /** Serve one accepted socket for a sandbox (the gateway forwarder's proxy port). */
  handle(socket: net.Socket, id: EgressIdentity): void;
  /** Open client sockets and upstream connections of a sandbox. */
  usage(sandboxId: string): { clients: number; upstream: number };
  close(): Promise<void>;
}

interface Usage {
  clients: number;
  upstream: number;
}

const HOP_BY_HOP = ['connection', 'keep-alive', 'proxy-connection', 'proxy-authorization', 'proxy-authenticate', 'te', 'trailer', 'transfer-encoding', 'upgrade'];

function endToEnd(headers: http.IncomingHttpHeaders): http.OutgoingHttpHeaders {
  const drop = new Set(HOP_BY_HOP);
  for (const name of String(headers.connection ?? '').split(',')) drop.add(name.trim().toLowerCase());
  const out: http.OutgoingHttpHeaders = {};
  for (const [k, v] of Object.entries(headers)) if (!drop.has(k) && v !== undefined) out[k] = v;
  return out;
}

const plain = (status: number, text: string, reason: string) => {
  const body = `${reason}\n`;
  return `HTTP/1.1 ${status} ${text}\r\ncontent-type: text/plain; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`;
};

/**
 * Answers and ends a raw socket (CONNECT refusals, limits). It is read to its end (a
 * detached socket is not flowing: the peer's FIN would never be seen) and destroyed if
 * the peer keeps it open.
 */
function refuse(socket: Duplex, status: number, text: string, reason: string): void {
  socket.on('error', () => socket.destroy());
  socket.resume();
  socket.end(plain(status, text, reason));
  const t = setTimeout(() => socket.destroy(), 5000);
  socket.once('close', () => clearTimeout(t));
}

/** `host:port` or `[v6]:port` of a CONNECT request. */
function authority(target: string): { host: string; port: number } | null {
  const m = /^(\[[^\]]+\]|[^:[\]]+):(\d{1,5})$/.exec(target);
  return m ? { host: m[1]!, port: Number(m[2]) } : null;
}

export function startEgressProxy(opts: EgressProxyOptions): EgressProxy {
  const log = opts.logger.child({ component: 'egress-proxy' });
  const max = opts.maxConnectionsPerSandbox ?? 128;
  const idleMs = opts.idleMs ?? 120_000;
  const headersTimeoutMs = opts.headersTimeoutMs ?? 15_000;
  const connectTimeoutMs = opts.connectTimeoutMs ?? 10_000;
  const dial = opts.dial ?? ((address: string, port: number) => net.connect({ host: address, port }));
  const usage = new Map<string, Usage>();
  const identities = new WeakMap<Duplex, EgressIdentity>();
  const sockets = new Set<net.Socket>();
  const firstRequest = new WeakMap<Duplex, NodeJS.Timeout>();
  const started = (socket: Duplex) => clearTimeout(firstRequest.get(socket));
  let closed = false;

  const use = (sandboxId: string) => {
    let u = usage.get(sandboxId);
    if (!u) usage.set(sandboxId, (u = { clients: 0, upstream: 0 }));
    return u;
  };
  const release = (sandboxId: string, field: keyof Usage) => {
    const u = use(sandboxId);
    u[field]--;
    if (u.clients <= 0 && u.upstream <= 0) usage.delete(sandboxId);
  };

  /** The policy's answer for one connection; a refusal is reported here, once per connection. */
  async function decide(id: EgressIdentity, host: string, port: number): Promise<EgressDecision> {
    const list = await opts.rulesFor(id);
    const d = await opts.policy.check(host, port, list);
    if (!d.ok) {
      log.debug({ sandbox_id: id.sandboxId, host: d.host, port, rule: d.rule }, 'egress refused');
      opts.onRefused?.(id, d);
    }
    return d;
  }

  /** An upstream connection, counted against the sandbox, or null when it has too many. */
  function openUpstream(id: EgressIdentity, address: string, port: number): net.Socket | null | 'no-fd' {
    const u = use(id.sandboxId);
    if (u.upstream >= max) return null;
    if (opts.admitFd && !opts.admitFd()) return 'no-fd';
    u.upstream++;
    const up = dial(address, port);
    sockets.add(up);
    let released = false;
    up.once('close', () => {
      sockets.delete(up);
      if (!released) release(id.sandboxId, 'upstream');
      released = true;
    });
    up.setTimeout(connectTimeoutMs, () => up.destroy(new Error(`no connection to ${address}:${port} in ${connectTimeoutMs} ms`)));
    up.once('connect', () => up.setTimeout(idleMs, () => up.destroy()));
    return up;
  }

  const server = http.createServer({ requireHostHeader: false });
  // Node's header and request timers start with listen(); this server never listens (it
  // is fed sockets), so the first-request deadline is ours. `timeout` is the idle limit
  // Node keeps on each socket between and during requests.
  server.timeout = idleMs;
  server.on('request', (req, res) => {
    started(req.socket);
    void onRequest(req, res).catch((err: Error) => {
      log.warn({ err: err.message }, 'egress request failed');
      if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain; charset=utf-8', connection: 'close' }).end('egress proxy error\n');
      else res.destroy();
    });
  });
  server.on('connect', (req: http.IncomingMessage, socket: Duplex, head: Buffer) => {
    started(socket);
    socket.on('error', () => socket.destroy());
    void onConnect(req, socket as net.Socket, head).catch((err: Error) => {
      log.warn({ err: err.message }, 'egress tunnel failed');
      if (socket.writable) refuse(socket, 502, 'Bad Gateway', 'egress proxy error');
      else socket.destroy();
    });
  });
  server.on('upgrade', (_req, socket: Duplex) => {
    refuse(socket, 501, 'Not Implemented', 'egress refused: upgrades over plain http are not proxied (use https, which goes through CONNECT)');
  });
  server.on('clientError', (_err, socket: Duplex) => {
    if (socket.writable) socket.end(plain(400, 'Bad Request', 'egress proxy: malformed request'));
    else socket.destroy();
  });

  async function onRequest(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const id = identities.get(req.socket)!;
    let url: URL | null = null;
    try {
      url = /^http:\/\//i.test(req.url ?? '') ? new URL(req.url!) : null;
    } catch {
      url = null;
    }
    if (!url) {
      res.writeHead(400, { 'content-type': 'text/plain; charset=utf-8' });
      res.end('egress proxy: send absolute-form requests for http:// (GET http://host/path) and CONNECT host:port for https\n');
      return;
    }
    const d = await decide(id, url.hostname, url.port ? Number(url.port) : 80);
    if (!d.ok) {
      res.writeHead(403, { 'content-type': 'text/plain; charset=utf-8', 'x-svc-egress-refused': d.rule });
      res.end(`egress refused: ${d.reason}\n`);
      return;
    }
    const up = openUpstream(id, d.address, d.port);
    if (up === 'no-fd') {
      res.writeHead(503, { 'content-type': 'text/plain; charset=utf-8', 'retry-after': '5' }).end('egress refused: the server is at its limit of open files for sandboxes\n');
      return;
    }
    if (!up) {
      res.writeHead(429, { 'content-type': 'text/plain; charset=utf-8' }).end(`egress refused: this sandbox has ${max} connections open through the proxy\n`);
      return;
    }
    const headers = endToEnd(req.headers);
    headers.host = url.host; // the absolute URI names the target (RFC 9112 3.2.2), whatever Host said
    const out = http.request({ createConnection: () => up, method: req.method, path: `${url.pathname}${url.search}`, headers, setHost: false });
    out.on('response', (r) => {
      res.writeHead(r.statusCode ?? 502, r.statusMessage, endToEnd(r.headers));
      r.pipe(res);
      r.on('error', () => res.destroy());
    });
    out.on('error', (err) => {
      if (!res.headersSent) {
        res.writeHead(502, { 'content-type': 'text/plain; charset=utf-8', connection: 'close' }).end(`egress proxy: ${d.host}:${d.port} failed: ${err.message}\n`);
      } else res.destroy();
    });
    res.on('close', () => {
      if (!res.writableFinished) out.destroy();
      up.destroy(); // one upstream connection per request: no pooling across sandboxes or checks
    });
    req.pipe(out);
  }

  async function onConnect(req: http.IncomingMessage, socket: net.Socket, head: Buffer): Promise<void> {
    const id = identities.get(socket)!;
    const target = authority(req.url ?? '');
    if (!target) {
      refuse(socket, 400, 'Bad Request', 'egress proxy: CONNECT takes host:port');
      return;
    }
    const d = await decide(id, target.host, target.port);
    if (!d.ok) {
      refuse(socket, 403, 'Forbidden', `egress refused: ${d.reason}`);
      return;
    }
    if (socket.destroyed) return;
    const up = openUpstream(id, d.address, d.port);
    if (up === 'no-fd') {
      refuse(socket, 503, 'Service Unavailable', 'egress refused: the server is at its limit of open files for sandboxes');
      return;
    }
    if (!up) {
      refuse(socket, 429, 'Too Many Requests', `egress refused: this sandbox has ${max} connections open through the proxy`);
      return;
    }
    let connected = false;
    up.once('error', (err) => {
      if (!connected && socket.writable) refuse(socket, 502, 'Bad Gateway', `egress proxy: ${d.host}:${d.port} failed: ${err.message}`);
      else socket.destroy();
    });
    socket.once('close', () => up.destroy());
    up.once('connect', () => {
      connected = true;
      // Detached from the HTTP server, the tunnel keeps the idle limit itself.
      socket.setTimeout(idleMs, () => socket.destroy());
      socket.write('HTTP/1.1 200 Connection Established\r\n\r\n');
      if (head.length) up.write(head);
      up.pipe(socket);
      socket.pipe(up);
      up.once('close', () => socket.destroy());
    });
  }

  return {
    handle(socket, id) {
      if (closed) {
        socket.destroy();
        return;
      }
      const u = use(id.sandboxId);
      if (u.clients >= max) {
        refuse(socket, 429, 'Too Many Requests', `egress refused: this sandbox has ${max} connections open to the proxy`);
        return;
      }
      u.clients++;
      sockets.add(socket);
      identities.set(socket, { sandboxId: id.sandboxId, projectId: id.projectId });
      socket.once('close', () => {
        sockets.delete(socket);
        release(id.sandboxId, 'clients');
      });
      socket.on('error', () => socket.destroy());
      // The first request head must come in time (cleared by the first request or CONNECT).
      const first = setTimeout(() => socket.destroy(), headersTimeoutMs);
      firstRequest.set(socket, first);
      socket.once('close', () => clearTimeout(first));
      server.emit('connection', socket);
    },
    usage(sandboxId) {
      const u = usage.get(sandboxId);
      return { clients: u?.clients ?? 0, upstream: u?.upstream ?? 0 };
    },
    async close() {
      closed = true;
      for (const s of sockets) s.destroy();
      sockets.clear();
    },
  };
}
