/**
 * A network-isolated sandbox's sockets, in `<sandbox dir>/` on the host (a directory
 * of the server's that no sandbox sees):
 *   gw/gateway.sock     the server listens (SandboxGatewayHost); `gw/` is bound READ-ONLY
 *                       into the sandbox at /run/svc/gw, so nothing inside can replace it;
 *   gw/egress.sock      the server's egress proxy (infra/egress/proxy.ts), made likewise;
 *   daemon/daemon.sock  the daemon (or an app sandbox's entrypoint) listens; `daemon/` is
 *                       the one directory bound read-write at /run/svc/daemon, and the
 *                       server dials it only through lib/sandbox-dial.ts (no link followed,
 *                       a socket or nothing).
 * Inside, svc-entrypoint forwards 127.0.0.1:SANDBOX_GATEWAY_PORT to the gateway socket, so
 * SVC_API_URL and the clone URL are plain loopback URLs, and 127.0.0.1:EGRESS_PROXY_PORT to
 * the egress socket, which HTTP_PROXY and friends name (egressProxyEnv).
 */
import { chmod, mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { socketUrl } from '../../lib/sandbox-dial.js';
import type { SandboxGatewayHost } from './port.js';

export const SANDBOX_RUN_DIR = '/run/svc';
export const SANDBOX_GATEWAY_DIR = `${SANDBOX_RUN_DIR}/gw`;
export const SANDBOX_DAEMON_DIR = `${SANDBOX_RUN_DIR}/daemon`;
export const GATEWAY_SOCKET = 'gateway.sock';
export const EGRESS_SOCKET = 'egress.sock';
export const DAEMON_SOCKET = 'daemon.sock';
/** The gateway's port on a sandbox's own loopback (its own network namespace: no clash). */
export const SANDBOX_GATEWAY_PORT = 4080;
/** The egress proxy's port on a sandbox's own loopback. */
export const EGRESS_PROXY_PORT = 3128;
/** The file naming the sandbox a directory belongs to (the gateway host re-opens gateways from it after a restart). */
export const GATEWAY_ID_FILE = 'gateway.json';

export interface SocketDirs {
  gw: string;
  daemon: string;
  /** The daemon's socket as the server dials it. */
  daemonUrl: string;
}

/**
 * `projectId`, given when the sandbox gets an egress socket (bwrap, docker), is recorded
 * beside the id: the egress proxy decides per project, for re-opened gateways too.
 */
export async function prepareSocketDirs(dir: string, sandboxId: string, projectId?: string): Promise<SocketDirs> {
  const gw = path.join(dir, 'gw');
  const daemon = path.join(dir, 'daemon');
  await mkdir(gw, { recursive: true });
  await mkdir(daemon, { recursive: true });
  // The sandbox user (1000 in images; the server's uid under bwrap's user namespace) must
  // traverse gw/ and create its socket in daemon/. The parent stays the server's alone.
  await chmod(dir, 0o711);
  await chmod(gw, 0o755);
  await chmod(daemon, 0o777);
  await writeFile(path.join(dir, GATEWAY_ID_FILE), JSON.stringify({ sandboxId, ...(projectId ? { projectId } : {}) }), { mode: 0o600 });
  return { gw, daemon, daemonUrl: socketUrl(path.join(daemon, DAEMON_SOCKET)) };
}

/** The sandbox's view of its sockets and gateway (merged into its environment by the provider). */
export function socketEnv(gatewayPort = SANDBOX_GATEWAY_PORT, gwDir = SANDBOX_GATEWAY_DIR, daemonDir = SANDBOX_DAEMON_DIR): Record<string, string> {
  return {
    SVC_GATEWAY_SOCKET: path.join(gwDir, GATEWAY_SOCKET),
    SVC_GATEWAY_PORT: String(gatewayPort),
    SVC_EGRESS_SOCKET: path.join(gwDir, EGRESS_SOCKET),
    SVC_EGRESS_PORT: String(EGRESS_PROXY_PORT),
    SVC_DAEMON_SOCKET: path.join(daemonDir, DAEMON_SOCKET),
  };
}

/**
 * The variables that point HTTP(S) clients at the egress proxy on the sandbox's loopback:
 * both spellings, since curl reads only the lower-case `http_proxy` and most others prefer
 * upper case. `NO_PROXY` keeps the gateway's own services (the API, smart HTTP, the
 * runtime) on loopback direct. `NODE_USE_ENV_PROXY` makes Node's own fetch/http honour
 * them (Node >= 24; older versions ignore it). A client that ignores all of this fails
 * closed: a sandbox with a network namespace of its own has no other route out. Given
 * by the bwrap and docker providers, after the injected environment (plumbing wins).
 */
export function egressProxyEnv(port: number = EGRESS_PROXY_PORT): Record<string, string> {
  const url = `http://127.0.0.1:${port}`;
  const noProxy = '127.0.0.1,localhost';
  return {
    HTTP_PROXY: url,
    HTTPS_PROXY: url,
    http_proxy: url,
    https_proxy: url,
    NO_PROXY: noProxy,
    no_proxy: noProxy,
    NODE_USE_ENV_PROXY: '1',
  };
}

/**
 * Every env value under the server's origin (SVC_API_URL, a managed repo's clone URL, a
 * model gateway URL …) rewritten to the sandbox's gateway on its loopback: the same path,
 * another origin. Without a gateway host the sandbox has no way to the server at all.
 */
export function routeThroughGateway(env: Record<string, string>, gateway: SandboxGatewayHost | undefined, gatewayPort = SANDBOX_GATEWAY_PORT): Record<string, string> {
  if (!gateway) return env;
  const from = gateway.serverOrigin().replace(/\/+$/, '');
  const to = `http://127.0.0.1:${gatewayPort}`;
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(env)) out[k] = v === from || v.startsWith(from + '/') ? to + v.slice(from.length) : v;
  return out;
}
