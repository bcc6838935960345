/**
 * The one polling helper of the tests. Waiting on an explicit condition (a row, a lock, a
 * feed position, a log line, a health answer) instead of a clock: `eventually` re-checks
 * `probe` between event-loop turns until it returns a truthy value, and returns it. It never
 * decides anything by elapsed time: a `timeoutMs` only turns a wait that would otherwise end
 * at the test's own timeout into an error naming what was awaited (and the last error, with
 * `ignoreErrors`).
 */
export interface EventuallyOptions {
  /** Give up (an error naming `what`) after this long; default: only the test's timeout bounds the wait. */
  timeoutMs?: number;
  /** A probe that throws is "not yet" (a server still starting) instead of failing the wait. */
  ignoreErrors?: boolean;
  /** The longest pause between probes (ms); default 20 (a probe that costs a process or a container: more). */
  maxIntervalMs?: number;
  /** What the awaited thing looked like last, read when the wait gives up (its message then says why). */
  state?: () => Promise<unknown> | unknown;
}

export async function eventually<T>(probe: () => Promise<T | undefined | null | false> | T | undefined | null | false, what = 'condition', opts: EventuallyOptions = {}): Promise<T> {
  const deadline = opts.timeoutMs === undefined ? Infinity : Date.now() + opts.timeoutMs;
  let lastErr: unknown;
  for (let i = 0; ; i++) {
    try {
      const v = await probe();
      if (v) return v;
    } catch (err) {
      if (!opts.ignoreErrors) throw err;
      lastErr = err;
    }
    if (Date.now() > deadline || i > 1_000_000) {
      const state = opts.state ? await Promise.resolve(opts.state()).then((v) => JSON.stringify(v), (e: unknown) => `unreadable: ${String(e)}`) : undefined;
      throw new Error(`gave up waiting for ${what}${lastErr ? ` (last error: ${String(lastErr)})` : ''}${state ? ` (last state: ${state})` : ''}`);
    }
    // Yield to I/O; back off a little so a long wait does not spin the CPU.
    await new Promise((r) => setTimeout(r, Math.min(2 + i, opts.maxIntervalMs ?? 20)));
  }
}

/** `eventually` for a yes/no condition. */
export async function until(cond: () => Promise<boolean> | boolean, what = 'condition', opts: EventuallyOptions = {}): Promise<void> {
  await eventually(cond, what, opts);
}
