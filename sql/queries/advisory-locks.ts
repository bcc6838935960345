import type { Query } from '../query.js';

/**
 * Cluster-wide advisory locks keyed by a name (`hashtextextended(name, 0)`): the leader
 * election of the periodic jobs (workers/supervisor.ts). A session lock belongs to the
 * connection that took it and goes with it when that connection dies.
 */
export const advisoryLockQueries = {
  tryLock: (key: string): Query => ({ text: 'SELECT pg_try_advisory_lock(hashtextextended($1, 0)) AS ok', values: [key] }),
  unlock: (key: string): Query => ({ text: 'SELECT pg_advisory_unlock(hashtextextended($1, 0)) AS ok', values: [key] }),
  /** Whether nobody holds the lock now (taken and given back at once). */
  isFree: (key: string): Query => ({
    text: `SELECT CASE WHEN pg_try_advisory_lock(hashtextextended($1, 0))
      THEN pg_advisory_unlock(hashtextextended($1, 0)) ELSE false END AS ok`,
    values: [key],
  }),
};
