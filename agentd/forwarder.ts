import { rm } from 'node:fs/promises';
import net from 'node:net';

/**
 * Byte pipes run by svc-entrypoint in a sandbox with a network namespace of its own
 * (infra/sandbox/gateway-dirs.ts):
 *   - the server's sockets on the sandbox's loopback (`loopbackForwards`): the gateway,
 *     127.0.0.1:<SVC_GATEWAY_PORT> → gateway.sock, so SVC_API_URL and the clone URL are
 *     loopback URLs; the egress proxy, 127.0.0.1:<SVC_EGRESS_PORT> → egress.sock;
 *   - an app sandbox's way in: the daemon socket → the app's 127.0.0.1:<PORT>.
 * Nothing is parsed: the server identifies the sandbox by the socket, not by the bytes.
 */
export type Target = { path: string } | { host: string; port: number };

export function pipeTo(target: Target): (client: net.Socket) => void {
  return (client) => {
    const up = net.connect({ ...target, allowHalfOpen: true } as net.NetConnectOpts);
    up.setNoDelay?.(true);
    client.setNoDelay?.(true);
    client.pipe(up);
    up.pipe(client);
    const drop = () => {
      client.destroy();
      up.destroy();
    };
    client.on('error', drop);
    up.on('error', drop);
    client.on('close', () => up.destroy());
    up.on('close', () => client.destroy());
  };
}

/** Listens on a TCP port of 127.0.0.1, or on a Unix socket path (a stale one replaced). */
export async function forward(listen: Target, to: Target): Promise<net.Server> {
  if ('path' in listen) await rm(listen.path, { force: true });
  const srv = net.createServer({ allowHalfOpen: true }, pipeTo(to));
  await new Promise<void>((resolve, reject) => {
    srv.once('error', reject);
    const done = () => {
      srv.off('error', reject);
      resolve();
    };
    if ('path' in listen) srv.listen(listen.path, done);
    else srv.listen(listen.port, listen.host, done);
  });
  return srv;
}

/** One server socket exposed on a TCP port of the sandbox's 127.0.0.1. */
export interface LoopbackForward {
  port: number;
  socket: string;
}

/** The port→socket pairs the environment names (each only with both its variables set). */
export function loopbackForwards(env: NodeJS.ProcessEnv): LoopbackForward[] {
  const pairs: LoopbackForward[] = [];
  for (const [port, socket] of [
    [env.SVC_GATEWAY_PORT, env.SVC_GATEWAY_SOCKET],
    [env.SVC_EGRESS_PORT, env.SVC_EGRESS_SOCKET],
  ]) {
    if (port && socket) pairs.push({ port: Number(port), socket });
  }
  return pairs;
}

/** Starts every forward; a port that cannot be bound fails the whole (the sandbox would be half-wired). */
export async function forwardAll(pairs: LoopbackForward[]): Promise<net.Server[]> {
  const servers: net.Server[] = [];
  try {
    for (const p of pairs) servers.push(await forward({ host: '127.0.0.1', port: p.port }, { path: p.socket }));
  } catch (err) {
    for (const s of servers) s.close();
    throw err;
  }
  return servers;
}
