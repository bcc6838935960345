import pg from 'pg';
import type { Logger } from '../../lib/logger.js';

import type { Query } from '../../sql/query.js';

export type { Query };

export interface Executor {
  rows<R = Record<string, unknown>>(q: Query): Promise<R[]>;
  one<R = Record<string, unknown>>(q: Query): Promise<R | undefined>;
  /** Number of rows the statement touched. */
  run(q: Query): Promise<number>;
}

export type Isolation = 'read committed' | 'repeatable read' | 'serializable';

export interface Db extends Executor {
  transaction<T>(fn: (tx: Executor) => Promise<T>, opts?: { isolation?: Isolation }): Promise<T>;
  /** A dedicated connection (LISTEN, long-lived cursors). Release it when done. */
  connect(): Promise<pg.PoolClient>;
  readonly pool: pg.Pool;
  readonly url: string;
  /** Bound to one checked-out connection (`singleConnection`): work must stay on it. */
  readonly dedicated?: boolean;
  close(): Promise<void>;
}

/**
 * The one transaction helper: BEGIN (at `isolation`), `fn`, COMMIT; ROLLBACK on any error
 * and rethrow that error (a failed ROLLBACK is attached as its `cause` when it had none,
 * never in its place). Every `Db.transaction` goes through it.
 */
export async function inTransaction<T>(client: pg.ClientBase, fn: (tx: Executor) => Promise<T>, isolation?: Isolation): Promise<T> {
  await client.query(isolation ? `BEGIN ISOLATION LEVEL ${isolationSql[isolation]}` : 'BEGIN');
  try {
    const result = await fn(executor(client));
    await client.query('COMMIT');
    return result;
  } catch (err) {
    await client.query('ROLLBACK').catch((rollbackErr: unknown) => {
      if (err instanceof Error && err.cause === undefined) err.cause = rollbackErr;
    });
    throw err;
  }
}

// bigint (int8) columns come back as strings by default; positions fit in a JS number.
pg.types.setTypeParser(pg.types.builtins.INT8, (v: string) => Number(v));

/** Adapts a pool or a checked-out client (inside a transaction it controls) to `Executor`. */
export function executor(client: pg.Pool | pg.ClientBase): Executor {
  return {
    async rows<R>(q: Query) {
      return (await client.query(q)).rows as R[];
    },
    async one<R>(q: Query) {
      return (await client.query(q)).rows[0] as R | undefined;
    },
    async run(q: Query) {
      return (await client.query(q)).rowCount ?? 0;
    },
  };
}

export function createDb(url: string, opts: { max?: number; logger?: Logger; applicationName?: string } = {}): Db {
  const pool = new pg.Pool({
    connectionString: url,
    max: opts.max ?? 10,
    application_name: opts.applicationName ?? 'svc',
    idleTimeoutMillis: 30_000,
  });
  // An idle client losing its connection (server restart) must not crash the process.
  pool.on('error', (err) => opts.logger?.warn({ err: err.message }, 'idle database connection failed'));
  const base = executor(pool);
  return {
    ...base,
    pool,
    url,
    connect: () => pool.connect(),
    async transaction<T>(fn: (tx: Executor) => Promise<T>, o: { isolation?: Isolation } = {}) {
      const client = await pool.connect();
      try {
        return await inTransaction(client, fn, o.isolation);
      } finally {
        client.release();
      }
    },
    close: () => pool.end(),
  };
}

/**
 * A `Db` bound to one checked-out connection: everything (transactions included) runs on
 * it. For work that must stay on the connection holding a session-level advisory lock,
 * and that must not need a second pool connection while it holds one.
 */
export function singleConnection(client: pg.PoolClient, base: Db): Db {
  const ex = executor(client);
  return {
    ...ex,
    pool: base.pool,
    url: base.url,
    connect: () => base.connect(),
    dedicated: true,
    transaction: <T>(fn: (tx: Executor) => Promise<T>, o: { isolation?: Isolation } = {}) => inTransaction(client, fn, o.isolation),
    close: async () => {},
  };
}

const isolationSql: Record<Isolation, string> = {
  'read committed': 'READ COMMITTED',
  'repeatable read': 'REPEATABLE READ',
  serializable: 'SERIALIZABLE',
};

/** SQLSTATE of a pg error, if it is one. */
export function pgCode(err: unknown): string | undefined {
  return typeof err === 'object' && err !== null && 'code' in err && typeof (err as { code: unknown }).code === 'string'
    ? (err as { code: string }).code
    : undefined;
}
