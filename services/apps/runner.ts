import type { SandboxHandle, SandboxProvider } from '../../infra/sandbox/port.js';
import { sandboxFetch } from '../../lib/sandbox-dial.js';

/**
 * App versions run in sandboxes of the server's provider (`SandboxSpec.app`). The ones
 * this worker started are destroyed when it stops (and redeployed by the next worker's
 * `resumeApps`), as app processes were before they were sandboxed. One per worker, made
 * by the wiring and passed in (`AppDeps.owned`).
 */
export class OwnedApps {
  private readonly owned = new Map<string, { provider: SandboxProvider; handle: SandboxHandle }>();

  track(provider: SandboxProvider, handle: SandboxHandle): void {
    this.owned.set(handle.sandboxId, { provider, handle });
  }

  /** Stops one app version's sandbox (idempotent). */
  async stop(provider: SandboxProvider, handle: SandboxHandle): Promise<void> {
    this.owned.delete(handle.sandboxId);
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

/** What waitHealthy says of a version whose sandbox ended before it answered. */
export const EXITED = 'the app exited before it became healthy';

/** Waits until `url` + `path` answers below 500, the sandbox is gone, or the time is up. */
export async function waitHealthy(url: string, path: string, gone: () => Promise<boolean>, timeoutMs: number): Promise<string | null> {
  const deadline = performance.now() + timeoutMs;
  let last = 'no answer';
  while (performance.now() < deadline) {
    if (await gone()) return EXITED;
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
  if (await gone()) return EXITED;
  return `not healthy after ${Math.round(timeoutMs / 1000)} s (${last})`;
}
