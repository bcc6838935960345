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
}): GatewayHub {
  const log = opts.logger.child({ component: 'sandbox-gateway' });
  const open = new Map<string, { server: http.Server; egress?: net.Server; dirFd: number }>();
  let handler: Handler | undefined;

  const onRequest = (sandboxId: string) => (req: http.IncomingMessage, res: http.ServerResponse) => {
    attachGateway(req, { sandboxId });
    delete req.headers.cookie;
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

  async function listen(sandboxId: string, dir: string, projectId?: string): Promise<void> {
    await close(sandboxId);
    const dirFd = openSync(dir, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
    const server = http.createServer(onRequest(sandboxId));
    let egress: net.Server | undefined;
    try {
      server.keepAliveTimeout = 65_000;
      server.on('upgrade', (_req, socket: Duplex) => socket.end('HTTP/1.1 403 Forbidden\r\nconnection: close\r\ncontent-length: 0\r\n\r\n'));
      server.on('clientError', (_e, socket) => socket.destroy());
      await bind(server, dirFd, GATEWAY_SOCKET);
      const proxy = opts.egress;
      if (proxy && projectId) {
        const id: EgressIdentity = Object.freeze({ sandboxId, projectId });
        egress = net.createServer((socket) => proxy(socket, id));
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
