import { closeSync, constants, openSync } from 'node:fs';
import { chmod, readdir, readFile, rm } from 'node:fs/promises';
import http from 'node:http';
import path from 'node:path';
import type { Duplex } from 'node:stream';
import { attachGateway } from '../../api/gateway.js';
import type { SandboxGatewayHost } from '../../infra/sandbox/port.js';
import { GATEWAY_ID_FILE, GATEWAY_SOCKET } from '../../infra/sandbox/gateway-dirs.js';
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
 * upgrades. The socket is bound relative to the directory's descriptor, held open while
 * it listens: the path stays short and no link is followed.
 */
export function createGatewayHub(opts: { logger: Logger; serverOrigin: () => string }): GatewayHub {
  const log = opts.logger.child({ component: 'sandbox-gateway' });
  const open = new Map<string, { server: http.Server; dirFd: number }>();
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

  async function listen(sandboxId: string, dir: string): Promise<void> {
    await close(sandboxId);
    const dirFd = openSync(dir, constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW);
    const at = `/proc/self/fd/${dirFd}/${GATEWAY_SOCKET}`;
    try {
      await rm(at, { force: true });
      const server = http.createServer(onRequest(sandboxId));
      server.keepAliveTimeout = 65_000;
      server.on('upgrade', (_req, socket: Duplex) => socket.end('HTTP/1.1 403 Forbidden\r\nconnection: close\r\ncontent-length: 0\r\n\r\n'));
      server.on('clientError', (_e, socket) => socket.destroy());
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(at, () => {
          server.off('error', reject);
          resolve();
        });
      });
      // The sandbox user (uid 1000 in an image) connects: the socket is open to it; the directory is read-only.
      await chmod(at, 0o666);
      open.set(sandboxId, { server, dirFd });
      log.debug({ sandbox_id: sandboxId }, 'gateway open');
    } catch (err) {
      closeSync(dirFd);
      throw err;
    }
  }

  async function close(sandboxId: string): Promise<void> {
    const g = open.get(sandboxId);
    if (!g) return;
    open.delete(sandboxId);
    g.server.closeAllConnections();
    await new Promise<void>((r) => g.server.close(() => r()));
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
        const id = await readFile(path.join(dir, GATEWAY_ID_FILE), 'utf8').then(
          (t) => (JSON.parse(t) as { sandboxId?: string }).sandboxId,
          () => undefined,
        );
        if (!id || open.has(id)) continue;
        await listen(id, path.join(dir, 'gw')).then(
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
