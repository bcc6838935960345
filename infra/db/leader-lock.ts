import pg from 'pg';
import type { Logger } from '../../lib/logger.js';
import { advisoryLockQueries as q } from '../../sql/queries/advisory-locks.js';
import type { Db } from './db.js';
import { withAdvisoryLock } from './advisory-lock.js';

/**
 * Leader election for periodic jobs, on a Postgres advisory lock named `key`; two ways:
 *  - `perPass`: the lock is taken for one pass on a pooled connection and given back after
 *    it (whoever asks first runs the pass; the others skip it);
 *  - `held`: the first process to take it keeps it on a connection of its own, outside the
 *    pool (holding it never takes a connection from requests), until it stops or that
 *    connection dies; followers ask with a pooled connection whether it is free.
 */
export interface LeaderLock {
  /** Runs `fn` as the leader; false (and `fn` not run) when another process leads. */
  run(fn: () => Promise<void>): Promise<boolean>;
  /** Whether this process holds the lock now (`held` only; a `perPass` lock is never kept). */
  readonly leading: boolean;
  release(): Promise<void>;
}

export function perPassLock(db: Db, key: string): LeaderLock {
  return {
    leading: false,
    async run(fn) {
      return (await withAdvisoryLock(db, key, fn)).locked;
    },
    async release() {},
  };
}

export function heldLock(db: Db, key: string, opts: { logger: Logger; applicationName: string }): LeaderLock {
  let conn: pg.Client | undefined;
  const lead = async (): Promise<boolean> => {
    if (conn) return true;
    const free = await db.one<{ ok: boolean }>(q.isFree(key));
    if (!free?.ok) return false;
    const c = new pg.Client({ connectionString: db.url, application_name: opts.applicationName });
    c.on('error', (err) => {
      opts.logger.warn({ err: err.message }, 'lost the leader connection');
      if (conn === c) conn = undefined;
      c.end().catch(() => {});
    });
    try {
      await c.connect();
      const r = await c.query<{ ok: boolean }>(q.tryLock(key).text, q.tryLock(key).values);
      if (r.rows[0]?.ok) {
        conn = c;
        opts.logger.info('this process leads');
        return true;
      }
    } catch (err) {
      await c.end().catch(() => {});
      throw err;
    }
    await c.end().catch(() => {});
    return false;
  };
  return {
    get leading() {
      return conn !== undefined;
    },
    async run(fn) {
      if (!(await lead())) return false;
      await fn();
      return true;
    },
    async release() {
      const c = conn;
      conn = undefined;
      if (!c) return;
      await c.query(q.unlock(key).text, q.unlock(key).values).catch(() => {});
      await c.end().catch(() => {});
    },
  };
}
