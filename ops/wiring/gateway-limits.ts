import { createFdBudget, defaultFdReserve, type FdBudget } from '../../lib/fd-budget.js';
import { readNofileLimit } from '../../lib/proc.js';

/**
 * What one sandbox may hold of the server through the sockets the server opens for it
 * (gateway.sock, egress.sock), whatever runs it (a session, a check, an app):
 *   - connections: at most `maxConnections` open on each socket (Node's `maxConnections`:
 *     one more is closed as it is accepted);
 *   - requests in flight on its gateway: at most `maxRequests` (one more: 429);
 *   - request rate on its gateway: a token bucket of `ratePerSecond`, `2 x` deep (429
 *     with Retry-After);
 *   - and, for every sandbox together, the server's descriptor budget (lib/fd-budget.ts):
 *     past it a new connection is closed and a request answered 503.
 * A refused request is answered after `refusalDelayMs`, on the connection it came on: a
 * flood's refusals are paced by its own connection cap.
 * Each refusal falls on the sandbox that asked; the counters are per sandbox id.
 */
export interface GatewayLimitSettings {
  maxConnections: number;
  maxRequests: number;
  ratePerSecond: number;
  fds: FdBudget;
  /** How long a refusal is held before it is sent (default 1 s; see ops/wiring/gateway.ts). */
  refusalDelayMs?: number;
}

export type Admission = { ok: true; release: () => void } | { ok: false; status: 429 | 503; message: string; retryAfter: number };

export interface GatewayLimits {
  readonly settings: GatewayLimitSettings;
  /** A new connection on one of this sandbox's sockets: false means close it now. */
  connection(): boolean;
  /** One request on a sandbox's gateway. */
  request(sandboxId: string): Admission;
  /** In-flight requests of a sandbox (tests, metrics). */
  inFlight(sandboxId: string): number;
  /** Refusals so far, per kind (tests, logs). */
  readonly refused: { connections: number; requests: number; rate: number; fds: number };
}

interface Bucket {
  tokens: number;
  at: number;
  inFlight: number;
}

export function createGatewayLimits(settings: GatewayLimitSettings, now: () => number = Date.now): GatewayLimits {
  const buckets = new Map<string, Bucket>();
  const depth = Math.max(1, settings.ratePerSecond * 2);
  const refused = { connections: 0, requests: 0, rate: 0, fds: 0 };

  const bucketOf = (id: string): Bucket => {
    let b = buckets.get(id);
    const t = now();
    if (!b) buckets.set(id, (b = { tokens: depth, at: t, inFlight: 0 }));
    b.tokens = Math.min(depth, b.tokens + ((t - b.at) / 1000) * settings.ratePerSecond);
    b.at = t;
    return b;
  };
  /** A bucket full again with nothing in flight is forgotten (a sandbox gone leaves nothing behind). */
  const forget = (id: string, b: Bucket) => {
    if (b.inFlight === 0 && b.tokens >= depth) buckets.delete(id);
  };

  return {
    settings,
    refused,
    connection() {
      if (settings.fds.admit()) return true;
      refused.fds++;
      return false;
    },
    request(sandboxId) {
      const b = bucketOf(sandboxId);
      if (b.tokens < 1) {
        refused.rate++;
        return { ok: false, status: 429, message: `This sandbox sent more than ${settings.ratePerSecond} requests per second to its gateway.`, retryAfter: Math.max(1, Math.ceil((1 - b.tokens) / settings.ratePerSecond)) };
      }
      if (b.inFlight >= settings.maxRequests) {
        refused.requests++;
        return { ok: false, status: 429, message: `This sandbox has ${settings.maxRequests} requests in flight through its gateway.`, retryAfter: 1 };
      }
      // A request may start a child process (git: three pipes) besides what it holds.
      if (!settings.fds.admit(4)) {
        refused.fds++;
        return { ok: false, status: 503, message: 'The server is at its limit of open files for sandboxes; try again shortly.', retryAfter: 5 };
      }
      b.tokens -= 1;
      b.inFlight++;
      let released = false;
      return {
        ok: true,
        release: () => {
          if (released) return;
          released = true;
          b.inFlight--;
          forget(sandboxId, bucketOf(sandboxId));
        },
      };
    },
    inFlight: (sandboxId) => buckets.get(sandboxId)?.inFlight ?? 0,
  };
}

/** The limits of this server process, from its configuration and its RLIMIT_NOFILE (read once, at start). */
export function gatewayLimitsFor(
  config: { SVC_SANDBOX_MAX_CONNECTIONS: number; SVC_SANDBOX_MAX_REQUESTS: number; SVC_SANDBOX_MAX_REQUEST_RATE: number; SVC_FD_RESERVE?: number | undefined },
  logger: { info(o: object, msg: string): void },
): GatewayLimits {
  const limit = readNofileLimit() ?? Number.MAX_SAFE_INTEGER;
  const reserve = Math.min(config.SVC_FD_RESERVE ?? defaultFdReserve(limit), limit);
  logger.info({ nofile: limit, reserve }, 'sandbox descriptor budget: RLIMIT_NOFILE minus the reserve');
  return createGatewayLimits({
    maxConnections: config.SVC_SANDBOX_MAX_CONNECTIONS,
    maxRequests: config.SVC_SANDBOX_MAX_REQUESTS,
    ratePerSecond: config.SVC_SANDBOX_MAX_REQUEST_RATE,
    fds: createFdBudget({ limit, reserve }),
  });
}
