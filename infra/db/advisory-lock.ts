import { advisoryLockQueries as q, type LockKey } from '../../sql/queries/advisory-locks.js';
import { singleConnection, type Db } from './db.js';

export type Locked<T> = { locked: true; value: T } | { locked: false };

/**
 * Runs `fn` holding the session advisory lock `key` (sql/queries/advisory-locks.ts), on one
 * pooled connection that `fn` gets as a `Db` (so the holder never waits for a second pool
 * connection). Without `wait`, one try: `{ locked: false }` (fn not run) when another
 * session holds it; with `wait`, Postgres queues this caller until the lock is free.
 *
 * The lock is given back however `fn` ends. If giving it back fails, the connection is
 * destroyed instead of returned to the pool (a pooled connection still holding the lock
 * would hold it for whoever borrows it next), which releases the lock in Postgres; `fn`'s
 * own outcome (its value or its error) is what the caller sees.
 */
export async function withAdvisoryLock<T>(db: Db, key: LockKey, fn: (db: Db) => Promise<T>, opts: { wait?: boolean } = {}): Promise<Locked<T>> {
  const conn = await db.connect();
  let broken = false;
  try {
    const one = singleConnection(conn, db);
    if (opts.wait) await one.run(q.lock(key));
    else if ((await one.one<{ ok: boolean }>(q.tryLock(key)))?.ok !== true) return { locked: false };
    try {
      return { locked: true, value: await fn(one) };
    } finally {
      await one.run(q.unlock(key)).catch(() => {
        broken = true;
      });
    }
  } finally {
    conn.release(broken);
  }
}
