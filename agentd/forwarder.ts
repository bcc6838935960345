import { rm } from 'node:fs/promises';
import net from 'node:net';

/**
 * Byte pipes run by svc-entrypoint in a sandbox with a network namespace of its own
 * (infra/sandbox/gateway-dirs.ts):
 *   - the sandbox gateway: 127.0.0.1:<SVC_GATEWAY_PORT> → the server's gateway socket
 *     (bound read-only), so SVC_API_URL and the clone URL are loopback URLs;
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
