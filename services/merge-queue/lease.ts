import { singleConnection, type Db } from '../../infra/db/db.js';
import { advisoryLockQueries as lock } from '../../sql/queries/advisory-locks.js';

/**
 * A queue check's lease: a session-level advisory lock the process running the check holds
 * on a connection of its own while it runs. It goes with the process (a SIGKILLed worker's
 * connection closes), so the queue tells a run still being worked from one whose worker
 * died without waiting for the check's timeout.
 */
const keyOf = (runId: string) => `check-run:${runId}`;

export async function takeRunLease(db: Db, runId: string): Promise<(() => Promise<void>) | null> {
  const conn = await db.connect();
  const one = singleConnection(conn, db);
  let locked = false;
  try {
    locked = (await one.one<{ ok: boolean }>(lock.tryLock(keyOf(runId))))?.ok === true;
  } catch (err) {
    conn.release(true);
    throw err;
  }
  if (!locked) {
    conn.release();
    return null;
  }
  return async () => {
    let broken = false;
    await one.run(lock.unlock(keyOf(runId))).catch(() => {
      broken = true; // never hand back a connection that may still hold the lease
    });
    conn.release(broken);
  };
}

/** Whether no live process holds the run's lease (its worker died, or it never started). */
export async function runIsOrphaned(db: Db, runId: string): Promise<boolean> {
  const release = await takeRunLease(db, runId);
  if (!release) return false;
  await release();
  return true;
}
