import type { Db } from '../../infra/db/db.js';
import { withAdvisoryLock } from '../../infra/db/advisory-lock.js';
import { retryLater } from '../../domain/errors.js';
import { failpointAsync } from '../../lib/failpoints.js';
import { step as traceStep } from '../../lib/step-trace.js';
import { exponential, jittered } from '../../lib/backoff.js';

/**
 * Runs `fn` holding the lock that serialises everything that changes a CR's fate against
 * one base branch (merges, closes, reopens), across processes. `fn` gets a `Db` bound to
 * the locking connection, so the holder never waits for a second pool connection.
 *
 * The wait is bounded and holds no connection: `pg_try_advisory_lock`, and between tries
 * (backing off with jitter, 10 ms up to 250 ms) the connection goes back to the pool, so
 * requests queued behind a slow push never starve the pool. Past `lockWaitMs` (default
 * 10 s): 503 with `Retry-After`.
 */
export async function withMergeLock<T>(
  deps: { db: Db; lockWaitMs?: number },
  projectId: string,
  baseRef: string,
  fn: (db: Db) => Promise<T>,
): Promise<T> {
  const key = `merge:${projectId}:${baseRef}`;
  const budget = deps.lockWaitMs ?? 10_000;
  const deadline = performance.now() + budget;
  for (let i = 0; ; i++) {
    let held = false;
    try {
      const r = await withAdvisoryLock(deps.db, key, (db) => ((held = true), fn(db)));
      if (r.locked) return r.value;
    } finally {
      if (held) traceStep('unlock');
    }
    await failpointAsync('merge-lock.busy'); // tests: another holder has the lock, this caller waits
    const left = deadline - performance.now();
    if (left <= 0) {
      throw retryLater(
        'unavailable',
        'Merge in progress',
        `Another merge, close or reopen into '${baseRef}' is running and did not finish within ${budget} ms; retry shortly.`,
        2,
      );
    }
    await new Promise((r) => setTimeout(r, Math.min(left, jittered(exponential(10, i, 250), 0.5))));
  }
}
