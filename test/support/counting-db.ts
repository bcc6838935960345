import type { Db, Executor, Query } from '../../infra/db/db.js';

/**
 * A Db that records every statement the server sends through it (rows/one/run, and
 * BEGIN/COMMIT of each transaction), for tests that count the statements a request
 * costs. Injected into the server under test (`startTestServer({ wrapDb })`); the pool,
 * dedicated connections (LISTEN) and pg-boss's own connections are not counted.
 */
export interface StatementLog {
  /** Statement texts since the last `reset`, in order. */
  readonly texts: string[];
  reset(): void;
}

export function countingDb(db: Db): { db: Db; log: StatementLog } {
  const texts: string[] = [];
  const counted = (ex: Executor): Executor => ({
    rows: (q: Query) => (texts.push(q.text), ex.rows(q)),
    one: (q: Query) => (texts.push(q.text), ex.one(q)),
    run: (q: Query) => (texts.push(q.text), ex.run(q)),
  }) as Executor;
  const wrapped: Db = Object.create(db) as Db;
  Object.assign(wrapped, counted(db), {
    transaction: <T>(fn: (tx: Executor) => Promise<T>, o?: { isolation?: 'read committed' | 'repeatable read' | 'serializable' }) => {
      texts.push('BEGIN');
      return db.transaction((tx) => fn(counted(tx)), o).finally(() => texts.push('COMMIT'));
    },
  });
  return { db: wrapped, log: { texts, reset: () => void texts.splice(0) } };
}
