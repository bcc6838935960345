/**
 * A network-isolated sandbox's two sockets, in `<sandbox dir>/` on the host (a directory
 * of the server's that no sandbox sees):
 *   gw/gateway.sock     the server listens (SandboxGatewayHost); `gw/` is bound READ-ONLY
 *                       into the sandbox at /run/svc/gw, so nothing inside can replace it;
 *   daemon/daemon.sock  the daemon (or an app sandbox's entrypoint) listens; `daemon/` is
 *                       the one directory bound read-write at /run/svc/daemon, and the
 *                       server dials it only through lib/sandbox-dial.ts (no link followed,
 *                       a socket or nothing).
 * Inside, svc-entrypoint forwards 127.0.0.1:SANDBOX_GATEWAY_PORT to the gateway socket, so
 * SVC_API_URL and the clone URL are plain loopback URLs.
 */
import { chmod, mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { socketUrl } from '../../lib/sandbox-dial.js';
import type { SandboxGatewayHost } from './port.js';

export const SANDBOX_RUN_DIR = '/run/svc';
export const SANDBOX_GATEWAY_DIR = `${SANDBOX_RUN_DIR}/gw`;
export const SANDBOX_DAEMON_DIR = `${SANDBOX_RUN_DIR}/daemon`;
export const GATEWAY_SOCKET = 'gateway.sock';
export const DAEMON_SOCKET = 'daemon.sock';
/** The gateway's port on a sandbox's own loopback (its own network namespace: no clash). */
export const SANDBOX_GATEWAY_PORT = 4080;
/** The file naming the sandbox a directory belongs to (the gateway host re-opens gateways from it after a restart). */
export const GATEWAY_ID_FILE = 'gateway.json';

export interface SocketDirs {
  gw: string;
  daemon: string;
  /** The daemon's socket as the server dials it. */
  daemonUrl: string;
}

export async function prepareSocketDirs(dir: string, sandboxId: string): Promise<SocketDirs> {
  const gw = path.join(dir, 'gw');
  const daemon = path.join(dir, 'daemon');
  await mkdir(gw, { recursive: true });
  await mkdir(daemon, { recursive: true });
  // The sandbox user (1000 in images; the server's uid under bwrap's user namespace) must
  // traverse gw/ and create its socket in daemon/. The parent stays the server's alone.
  await chmod(dir, 0o711);
  await chmod(gw, 0o755);
  await chmod(daemon, 0o777);
  await writeFile(path.join(dir, GATEWAY_ID_FILE), JSON.stringify({ sandboxId }), { mode: 0o600 });
  return { gw, daemon, daemonUrl: socketUrl(path.join(daemon, DAEMON_SOCKET)) };
}

/** The sandbox's view of its sockets and gateway (merged into its environment by the provider). */
export function socketEnv(gatewayPort = SANDBOX_GATEWAY_PORT, gwDir = SANDBOX_GATEWAY_DIR, daemonDir = SANDBOX_DAEMON_DIR): Record<string, string> {
  return {
    SVC_GATEWAY_SOCKET: path.join(gwDir, GATEWAY_SOCKET),
    SVC_GATEWAY_PORT: String(gatewayPort),
    SVC_DAEMON_SOCKET: path.join(daemonDir, DAEMON_SOCKET),
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
