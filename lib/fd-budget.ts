import { countOpenFds } from './proc.js';

/**
 * The server's file-descriptor budget. What sandboxes open (connections to their gateway
 * and egress sockets, the proxy's upstream connections) may use descriptors only up to the
 * process's limit minus a reserve kept for everything else: the public listener and its
 * clients, PostgreSQL connections, child processes' pipes (git, sandbox launches). Past
 * that, a sandbox's new connection is closed at once; nobody else notices.
 *
 * The count is the process's real one (/proc/self/fd), read at most every `sampleMs`;
 * between reads every admission is added to it and nothing is taken off, so the estimate
 * only errs high (refusing early, never admitting past the line).
 */
export interface FdBudget {
  /** RLIMIT_NOFILE (soft) as read at start. */
  readonly limit: number;
  readonly reserve: number;
  /** Descriptors open now, as last estimated. */
  open(): number;
  /** True (and counted) when `n` more descriptors fit below limit - reserve. */
  admit(n?: number): boolean;
  /** Descriptors still free below the line (the count read afresh when stale). */
  room(): number;
}

/** Without an explicit reserve: a quarter of the limit, at least 256, at most half. */
export function defaultFdReserve(limit: number): number {
  return Math.min(Math.floor(limit / 2), Math.max(256, Math.floor(limit / 4)));
}

export function createFdBudget(opts: { limit: number; reserve: number; count?: () => number; sampleMs?: number; now?: () => number }): FdBudget {
  const count = opts.count ?? countOpenFds;
  const sampleMs = opts.sampleMs ?? 50;
  const now = opts.now ?? Date.now;
  const line = opts.limit - opts.reserve;
  let estimate = count();
  let sampledAt = now();
  const resample = () => {
    estimate = count();
    sampledAt = now();
  };
  return {
    limit: opts.limit,
    reserve: opts.reserve,
    open: () => estimate,
    admit(n = 1) {
      if (now() - sampledAt >= sampleMs) resample();
      // At most one /proc read per sampleMs: a flood costs one readdir per tick.
      if (estimate + n >= line) return false;
      estimate += n;
      return true;
    },
    room() {
      if (now() - sampledAt >= sampleMs) resample();
      return line - estimate;
    },
  };
}
