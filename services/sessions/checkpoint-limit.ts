/**
 * How often a session's sandbox may send a checkpoint (`PUT …/sessions/:id/wip`): a bucket
 * per session of `burst` checkpoints, one more every `everyMs`. The daemon sends at most one
 * a minute and a final one at a stop, well inside it; an agent that holds SVC_TOKEN and
 * sends more (each up to SVC_SESSION_WIP_MAX_BYTES, unpacked and checked by the server)
 * gets 429 with the seconds to wait, before its body is read. Per API process, held by the
 * route that uses it (not a module global); at most `maxKeys` sessions are remembered
 * (the oldest forgotten first: a forgotten one starts full, never stricter).
 */
export interface CheckpointLimitOptions {
  burst: number;
  everyMs: number;
  maxKeys: number;
}

export class CheckpointLimiter {
  private readonly buckets = new Map<string, { tokens: number; at: number }>();

  constructor(
    private readonly o: CheckpointLimitOptions = { burst: 6, everyMs: 10_000, maxKeys: 10_000 },
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** Takes one checkpoint for `key`: 0 when allowed, else the whole seconds until one is. */
  take(key: string): number {
    const t = this.now();
    const b = this.buckets.get(key) ?? { tokens: this.o.burst, at: t };
    const tokens = Math.min(this.o.burst, b.tokens + (t - b.at) / this.o.everyMs);
    this.buckets.delete(key); // re-inserted last: the map's order is the age of last use
    if (tokens < 1) {
      this.buckets.set(key, { tokens, at: t });
      return Math.max(1, Math.ceil(((1 - tokens) * this.o.everyMs) / 1000));
    }
    this.buckets.set(key, { tokens: tokens - 1, at: t });
    if (this.buckets.size > this.o.maxKeys) this.buckets.delete(this.buckets.keys().next().value!);
    return 0;
  }
}
