import { closeSync, constants, openSync } from 'node:fs';
import { chmod, readdir, readFile, rm } from 'node:fs/promises';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import type { Duplex } from 'node:stream';
import { attachGateway } from '../../api/gateway.js';
import type { EgressIdentity } from '../../infra/egress/proxy.js';
import type { SandboxGatewayHost } from '../../infra/sandbox/port.js';
import { EGRESS_SOCKET, GATEWAY_ID_FILE, GATEWAY_SOCKET } from '../../infra/sandbox/gateway-dirs.js';
import type { Logger } from '../../lib/logger.js';
import type { GatewayLimits } from './gateway-limits.js';

type Handler = (req: http.IncomingMessage, res: http.ServerResponse) => void;

export interface GatewayHub extends SandboxGatewayHost {
  /** The API that answers gateway requests (set once the HTTP server is built). */
  serve(handler: Handler): void;
  /** Re-opens the gateways of sandboxes left running by an earlier server process (`<root>/<name>/gateway.json`). */
  reopen(root: string): Promise<number>;
  closeAll(): Promise<void>;
}

/**
 * The server's end of every sandbox's gateway (infra/sandbox/gateway-dirs.ts): one Unix
 * socket per sandbox, created by this process in `<sandbox dir>/gw/` (read-only inside the
 * sandbox), serving the API with the sandbox's identity attached to each request object
 * (api/gateway.ts). Dashboard cookies do not pass (a sandbox has none to give), nor do
 * upgrades. Given the sandbox's project, a second socket beside it, `egress.sock`, hands
 * every connection it accepts to the egress proxy (`egress`) with the identity this
 * socket was opened for: which socket accepted a connection says whose it is, nothing
 * sent on it can. The sockets are bound relative to the directory's descriptor, held open
 * while they listen: the path stays short and no link is followed.
 */
export function createGatewayHub(opts: {
  logger: Logger;
  serverOrigin: () => string;
  /** The egress proxy (ops/wiring/egress.ts); absent: no egress socket is opened. */
  egress?: (socket: net.Socket, id: EgressIdentity) => void;
  /** Per-sandbox connection, request and rate caps and the server's descriptor budget (ops/wiring/gateway-limits.ts); absent: unbounded (tests of other things). */
  limits?: GatewayLimits;
}): GatewayHub {
  const log = opts.logger.child({ component: 'sandbox-gateway' });
  const open = new Map<string, { server: http.Server; egress?: net.Server; dirFd: number }>();
  let handler: Handler | undefined;

  const limits = opts.limits;
  /** One warning per sandbox and minute when it meets a cap (a flood must not flood the log). */
  const warned = new Map<string, number>();
  const atCap = (sandboxId: string, what: string) => {
    const t = Date.now();
    if ((warned.get(sandboxId) ?? 0) > t - 60_000) return;
    warned.set(sandboxId, t);
    if (warned.size > 10_000) warned.clear();
    log.warn({ sandbox_id: sandboxId, cap: what }, 'a sandbox met a cap of its gateway');
  };

  const onRequest = (sandboxId: string) => (req: http.IncomingMessage, res: http.ServerResponse) => {
    attachGateway(req, { sandboxId });
    delete req.headers.cookie;
    if (limits) {
      const a = limits.request(sandboxId);
      if (!a.ok) {
        atCap(sandboxId, a.status === 503 ? 'descriptors' : 'requests');
        const body = JSON.stringify({ error: a.status === 429 ? 'Too many requests' : 'Unavailable', message: a.message });
        // The refusal waits (holding that connection, which the sandbox's connection cap
        // counts) before it is sent: a flood then gets at most one refusal per held
        // connection per delay, instead of as many as it can send, and the server's time
        // goes to everyone else. Whatever body it sent is not read: the connection goes
        // with the answer.
        const answer = () => {
          if (res.destroyed) return;
          res.writeHead(a.status, { 'content-type': 'application/json; charset=utf-8', 'retry-after': String(a.retryAfter), 'content-length': Buffer.byteLength(body), connection: 'close' }).end(body);
          res.once('finish', () => req.socket.destroySoon());
        };
        const delay = limits.settings.refusalDelayMs ?? 1000;
        if (delay <= 0) answer();
        else {
          const t = setTimeout(answer, delay);
          res.once('close', () => clearTimeout(t));
        }
        return;
      }
      res.once('close', a.release);
    }
    if (!handler) {
      res.writeHead(503, { 'content-type': 'application/json' }).end(JSON.stringify({ error: 'Unavailable', message: 'This server process has no API role.' }));
      return;
    }
    handler(req, res);
  };

  /** Listens on `<dir>/<name>` (a stale file there removed), open to the sandbox's user. */
  async function bind(server: net.Server, dirFd: number, name: string): Promise<void> {
    const at = `/proc/self/fd/${dirFd}/${name}`;
    await rm(at, { force: true });
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(at, () => {
        server.off('error', reject);
        // A failed accept (EMFILE) drops that connection; unheard, it would end the process.
        server.on('error', (err) => log.warn({ err: err.message, socket: name }, 'a sandbox socket could not accept a connection'));
        resolve();
      });
    });
    // The sandbox user (uid 1000 in an image) connects: the socket is open to it; the directory is read-only.
    await chmod(at, 0o666);
  }

  /**
   * The socket's connection cap (Node closes one more as it is accepted) and the server's
   * descriptor budget (checked for each connection accepted, before any byte is read).
   */
  function bound(server: net.Server, sandboxId: string): void {
    const l = limits!;
    server.maxConnections = l.settings.maxConnections;
    server.on('drop', () => {
      l.refused.connections++;
      atCap(sandboxId, 'connections');
    });
    // After http's own listener (it sets the socket up; a destroyed one it lets go).
    let held = 0;
    let restoring: NodeJS.Timeout | undefined;
    server.on('connection', (socket: net.Socket) => {
      if (l.connection()) {
        held++;
        socket.once('close', () => held--);
        return;
      }
      atCap(sandboxId, 'descriptors');
      socket.destroy();
      // Past the budget, this socket's cap drops to what it holds: Node then closes further
      // connections as it accepts them, before any object is made for them (a flood costs
      // next to nothing). Restored once the budget has room again.
      server.maxConnections = Math.max(1, held);
      restoring ??= setInterval(() => {
        if (l.settings.fds.room() < 64 && server.listening) return;
        server.maxConnections = l.settings.maxConnections;
        clearInterval(restoring);
        restoring = undefined;
      }, 250).unref();
    });
    server.once('close', () => clearInterval(restoring));
  }

  async function listen(sandboxId: string, dir: string, projectId?: string): Promise<void> {
    await close(sandboxId);
    const dirFd = openSync(dir, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
    const server = http.createServer(onRequest(sandboxId));
    let egress: net.Server | undefined;
    try {
      server.keepAliveTimeout = 65_000;
      if (limits) bound(server, sandboxId);
      server.on('upgrade', (_req, socket: Duplex) => socket.end('HTTP/1.1 403 Forbidden\r\nconnection: close\r\ncontent-length: 0\r\n\r\n'));
      server.on('clientError', (_e, socket) => socket.destroy());
      await bind(server, dirFd, GATEWAY_SOCKET);
      const proxy = opts.egress;
      if (proxy && projectId) {
        const id: EgressIdentity = Object.freeze({ sandboxId, projectId });
        if (limits) bound((egress = net.createServer()), sandboxId);
        else egress = net.createServer();
        // Registered after `bound`'s budget check: a connection it closed is not handed over.
        egress.on('connection', (socket: net.Socket) => {
          if (!socket.destroyed) proxy(socket, id);
        });
        await bind(egress, dirFd, EGRESS_SOCKET);
      }
      open.set(sandboxId, { server, ...(egress ? { egress } : {}), dirFd });
      log.debug({ sandbox_id: sandboxId, egress: Boolean(egress) }, 'gateway open');
    } catch (err) {
      if (server.listening) server.close();
      if (egress?.listening) egress.close();
      closeSync(dirFd);
      throw err;
    }
  }

  async function close(sandboxId: string): Promise<void> {
    const g = open.get(sandboxId);
    if (!g) return;
    open.delete(sandboxId);
    g.server.closeAllConnections();
    // Closing the egress listener leaves its accepted sockets to the proxy (closed with it).
    await Promise.all([new Promise<void>((r) => g.server.close(() => r())), g.egress ? new Promise<void>((r) => g.egress!.close(() => r())) : undefined]);
    closeSync(g.dirFd);
  }

  return {
    serverOrigin: () => new URL(opts.serverOrigin()).origin,
    open: listen,
    close,
    serve(h) {
      handler = h;
    },
    async reopen(root) {
      let n = 0;
      for (const name of await readdir(root).catch(() => [] as string[])) {
        const dir = path.join(root, name);
        const ids = await readFile(path.join(dir, GATEWAY_ID_FILE), 'utf8').then(
          (t) => JSON.parse(t) as { sandboxId?: string; projectId?: string },
          () => undefined,
        );
        const id = ids?.sandboxId;
        if (!id || open.has(id)) continue;
        // The project is recorded only for sandboxes that have an egress socket (prepareSocketDirs).
        await listen(id, path.join(dir, 'gw'), ids.projectId).then(
          () => n++,
          (err: Error) => log.warn({ sandbox_id: id, err: err.message }, 'gateway not re-opened'),
        );
      }
      return n;
    },
    async closeAll() {
      for (const id of [...open.keys()]) await close(id);
    },
  };
}
