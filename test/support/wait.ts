/**
 * Waiting on an explicit condition (a row, a lock, a feed position) instead of a clock:
 * `until` re-checks `cond` between event-loop turns until it holds. It never decides
 * anything by elapsed time; the surrounding test's timeout is the only bound.
 */
export async function until(cond: () => Promise<boolean> | boolean, what = 'condition'): Promise<void> {
  for (let i = 0; ; i++) {
    if (await cond()) return;
    // Yield to I/O; back off a little so a long wait does not spin the CPU.
    await new Promise((r) => setTimeout(r, Math.min(2 + i, 20)));
    if (i > 100_000) throw new Error(`gave up waiting for ${what}`);
  }
}
