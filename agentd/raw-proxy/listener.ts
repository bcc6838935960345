import { rm } from 'node:fs/promises';
import net from 'node:net';
import type http from 'node:http';
import { ClientConnection, type RawProxyDeps } from './connection.js';

/**
 * The daemon's listening socket. Every connection starts on the raw proxy
 * (`ClientConnection`): proxied requests never touch Node's http module. A request the
 * proxy does not serve itself hands its connection to `httpServer` (which never listens
 * on its own) at that request boundary, with the bytes read so far put back.
 */
export class DaemonListener {
  readonly server: net.Server;
  /** More listening sockets with the same handling (the Unix socket the server dials). */
  private readonly extra: net.Server[] = [];
  private readonly sockets = new Set<net.Socket>();
  private readonly onConnection: (accepted: net.Socket) => void;

  constructor(httpServer: http.Server, deps: Omit<RawProxyDeps, 'handOff'>) {
    // Assigned onto `deps`, not spread: a getter there (the rotating key of a pool sandbox) stays live.
    const full: RawProxyDeps = Object.assign(deps, { handOff: (socket: net.Socket) => httpServer.emit('connection', socket) });
    // Half-open like the http server: a client may send its request and FIN, then read.
    // Accepted paused: the connection takes the socket over before anything is read.
    this.onConnection = (accepted) => {
      const { socket } = new ClientConnection(accepted, full);
      this.sockets.add(socket);
      socket.once('close', () => this.sockets.delete(socket));
    };
    this.server = net.createServer({ allowHalfOpen: true, noDelay: true, pauseOnConnect: true }, this.onConnection);
  }

  /** Also serves on the Unix socket `path` (a stale one from an earlier daemon is replaced). */
  async listenOnSocket(path: string): Promise<void> {
    await rm(path, { force: true });
    const srv = net.createServer({ allowHalfOpen: true, pauseOnConnect: true }, this.onConnection);
    await new Promise<void>((resolve, reject) => {
      srv.once('error', reject);
      srv.listen(path, () => {
        srv.off('error', reject);
        resolve();
      });
    });
    this.extra.push(srv);
  }

  /** Stops accepting and drops every connection, proxied or handed off. */
  close(): void {
    this.server.close();
    for (const s of this.extra) s.close();
    for (const s of this.sockets) s.destroy();
    this.sockets.clear();
  }
}
