import { singleConnection, type Db } from '../db/db.js';
import { mergeAttemptQueries as attempts } from '../../sql/queries/merge-attempts.js';

/**
 * Runs `fn` holding the lock that serialises everything that changes a CR's fate against
 * one base branch (merges, closes, reopens), across processes. `fn` gets a `Db` bound to
 * the locking connection, so the holder never waits for a second pool connection.
 */
export async function withMergeLock<T>(deps: { db: Db }, projectId: string, baseRef: string, fn: (db: Db) => Promise<T>): Promise<T> {
  const key = `merge:${projectId}:${baseRef}`;
  const conn = await deps.db.connect();
  let broken = false;
  try {
    const db = singleConnection(conn, deps.db);
    await db.run(attempts.lock(key));
    try {
      return await fn(db);
    } finally {
      await db.run(attempts.unlock(key)).catch(() => {
        broken = true; // never hand a connection that may still hold the lock back to the pool
      });
    }
  } finally {
    conn.release(broken);
  }
}
