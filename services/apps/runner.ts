import net from 'node:net';
import type { SandboxHandle, SandboxProvider } from '../../infra/sandbox/port.js';
import { connectSandbox, isSocketUrl, sandboxFetch } from '../../lib/sandbox-dial.js';

/**
 * App versions run in sandboxes of the server's provider (`SandboxSpec.app`). The ones
 * this worker started are destroyed when it stops (and redeployed by the next worker's
 * `resumeApps`), as app processes were before they were sandboxed. One per worker, made
 * by the wiring and passed in (`AppDeps.owned`).
 */
export class OwnedApps {
  private readonly owned = new Map<string, { provider: SandboxProvider; handle: SandboxHandle }>();
  /** The host port of each app in a network namespace of its own, forwarded to its socket. */
  private readonly fronts = new Map<string, net.Server>();

  track(provider: SandboxProvider, handle: SandboxHandle): void {
    this.owned.set(handle.sandboxId, { provider, handle });
  }

  /**
   * An app sandbox with a network namespace of its own (bwrap, docker) is reached through
   * its socket (`handle.url`); its URL stays `http://<host>:<port>`: this process listens
   * there and forwards each connection to the app's socket.
   */
  async expose(handle: SandboxHandle, host: string, port: number): Promise<void> {
    if (!isSocketUrl(handle.url)) return; // on the host's network: the app listens there itself
    const front = net.createServer({ allowHalfOpen: true }, (client) => {
      const up = connectSandbox(handle.url);
      client.pipe(up);
      up.pipe(client);
      const drop = () => (client.destroy(), up.destroy());
      client.on('error', drop);
      up.on('error', drop);
      client.on('close', () => up.destroy());
      up.on('close', () => client.destroy());
    });
    await new Promise<void>((resolve, reject) => {
      front.once('error', reject);
      front.listen(port, host, () => resolve());
    });
    this.fronts.set(handle.sandboxId, front);
  }

  /** Stops one app version's sandbox (idempotent). */
  async stop(provider: SandboxProvider, handle: SandboxHandle): Promise<void> {
    this.owned.delete(handle.sandboxId);
    const front = this.fronts.get(handle.sandboxId);
    this.fronts.delete(handle.sandboxId);
    front?.close();
    await provider.destroy(handle);
  }

  /** Every app sandbox this worker started (shutdown). */
  async stopAll(): Promise<string[]> {
    const all = [...this.owned.values()];
    await Promise.all(all.map(({ provider, handle }) => this.stop(provider, handle).catch(() => undefined)));
    return all.map((a) => a.handle.sandboxId);
  }
}

/** An app row from before sandboxes (a host process group by pid): stopped the old way. */
export function stopLegacyPid(pid: number): void {
  try {
    process.kill(-pid, 'SIGTERM');
  } catch {
    /* already gone */
  }
}

/** Waits until `url` + `path` answers below 500, the sandbox is gone, or the time is up. */
export async function waitHealthy(url: string, path: string, gone: () => Promise<boolean>, timeoutMs: number): Promise<string | null> {
  const deadline = Date.now() + timeoutMs;
  let last = 'no answer';
  while (Date.now() < deadline) {
    if (await gone()) return 'the app exited before it became healthy';
    try {
      const res = await sandboxFetch(url, path, { signal: AbortSignal.timeout(2000), redirect: 'manual' });
      await res.arrayBuffer().catch(() => undefined);
      if (res.status < 500) return null;
      last = `health check answered ${res.status}`;
    } catch {
      last = 'no answer on its port';
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  // A loaded machine may see the exit only now: say so rather than blame the health check.
  if (await gone()) return 'the app exited before it became healthy';
  return `not healthy after ${Math.round(timeoutMs / 1000)} s (${last})`;
}
