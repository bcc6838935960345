import type { Logger } from '../lib/logger.js';
import type { ApiServices } from '../services/api-services/index.js';

/**
 * A WebSocket or a streamed response (SSE) proxied to a sandbox (agent or preview route)
 * lives no longer than the token that opened it and the sandbox it reaches: one pair of
 * queries per tick, for every open one at once, finds the tokens revoked or expired and
 * the sandboxes no longer serving a running session (stopped, restarted, removed), and
 * cuts those both ways within `everyMs` (+ the queries). The events feed does the same for
 * its sockets. Nothing open, no queries.
 */
interface Cuttable {
  destroy(): unknown;
  once(event: 'close', listener: () => void): unknown;
}

export interface ProxiedSockets {
  track(entry: { client: Cuttable; upstream: Cuttable; tokenId: string; sandboxId: string }): void;
  /** Open proxied exchanges (tests, metrics). */
  readonly size: number;
}

const watchers = new WeakMap<object, ProxiedSockets>();

/** One watcher per server's services (so the HTTP routes and the upgrade handler share one tick). */
export function proxiedSocketsOf(opts: { services: ApiServices; logger: Logger }): ProxiedSockets {
  let w = watchers.get(opts.services);
  if (!w) watchers.set(opts.services, (w = watchProxiedSockets(opts)));
  return w;
}

function watchProxiedSockets(opts: { services: ApiServices; logger: Logger; everyMs?: number }): ProxiedSockets {
  const everyMs = opts.everyMs ?? 250;
  const open = new Map<Cuttable, { upstream: Cuttable; tokenId: string; sandboxId: string }>();
  let timer: NodeJS.Timeout | undefined;
  let checking = false;

  const cut = (client: Cuttable) => {
    const e = open.get(client);
    open.delete(client);
    e?.upstream.destroy();
    client.destroy();
  };

  const check = async () => {
    if (checking) return;
    if (open.size === 0) {
      clearInterval(timer);
      timer = undefined;
      return;
    }
    checking = true;
    try {
      const entries = [...open.entries()];
      const [tokens, sandboxes] = await Promise.all([
        opts.services.feed.deadTokens([...new Set(entries.map(([, e]) => e.tokenId))]),
        opts.services.sandboxes.notLive([...new Set(entries.map(([, e]) => e.sandboxId))]),
      ]);
      for (const [client, e] of entries) if (tokens.has(e.tokenId) || sandboxes.has(e.sandboxId)) cut(client);
    } catch (err) {
      opts.logger.warn({ err: (err as Error).message }, 'session proxy could not check its sockets');
    } finally {
      checking = false;
    }
  };

  return {
    track({ client, upstream, tokenId, sandboxId }) {
      open.set(client, { upstream, tokenId, sandboxId });
      const gone = () => open.delete(client);
      client.once('close', gone);
      upstream.once('close', gone);
      timer ??= setInterval(() => void check(), everyMs).unref();
    },
    get size() {
      return open.size;
    },
  };
}
