import type { Query } from '../query.js';

/**
 * Cluster-wide advisory locks, the one builder for every lock the server takes by name:
 * a text key is hashed (`hashtextextended(key, 0)`); a bigint key is the lock itself (the
 * migration lock's number, kept so that a server of an earlier version migrating at the
 * same moment still excludes this one). A session lock belongs to the connection that took
 * it and goes with it when that connection dies; a transaction lock (`xactLock`) goes at
 * its transaction's end. Taken through `withAdvisoryLock` (infra/db/advisory-lock.ts) or
 * the leader locks of the periodic jobs (infra/db/leader-lock.ts).
 */
export type LockKey = string | bigint;

const id = (key: LockKey) => (typeof key === 'bigint' ? '$1::bigint' : 'hashtextextended($1, 0)');
const value = (key: LockKey) => (typeof key === 'bigint' ? key.toString() : key);

export const advisoryLockQueries = {
  /** Waits until the lock is free, then takes it. */
  lock: (key: LockKey): Query => ({ text: `SELECT pg_advisory_lock(${id(key)})`, values: [value(key)] }),
  /** Takes the lock when it is free: `ok` false (nothing taken) when another session holds it. */
  tryLock: (key: LockKey): Query => ({
    // Prepared once per connection: the merge path takes it on every merge.
    name: typeof key === 'bigint' ? 'advisory_try_lock_id' : 'advisory_try_lock',
    text: `SELECT pg_try_advisory_lock(${id(key)}) AS ok`,
    values: [value(key)],
  }),
  unlock: (key: LockKey): Query => ({ text: `SELECT pg_advisory_unlock(${id(key)}) AS ok`, values: [value(key)] }),
  /** Every session lock this connection holds, given back (before a pooled connection is returned). */
  unlockAll: (): Query => ({ text: 'SELECT pg_advisory_unlock_all()', values: [] }),
  /** Whether nobody holds the lock now (taken and given back at once). */
  isFree: (key: LockKey): Query => ({
    text: `SELECT CASE WHEN pg_try_advisory_lock(${id(key)})
      THEN pg_advisory_unlock(${id(key)}) ELSE false END AS ok`,
    values: [value(key)],
  }),
  /**
   * The transaction-scoped lock on `key`, released at commit or rollback: one writer at a
   * time per stream. Hashed with seed 12, a key space of its own.
   */
  xactLock: (key: string): Query => ({ text: 'SELECT pg_advisory_xact_lock(hashtextextended($1, 12))', values: [key] }),
};
