import pg from 'pg';
import type { Config } from '../config.js';
import { createDb, type Db } from './db.js';
import { startEmbeddedPostgres } from './embedded.js';
import type { Logger } from '../../lib/logger.js';
import { clusterQueries } from '../../sql/queries/cluster.js';

export const EMBEDDED_DATABASE = 'svc';

export interface Database {
  db: Db;
  url: string;
  embedded: boolean;
  close(): Promise<void>;
}

/**
 * `DATABASE_URL` when given; otherwise the embedded PostgreSQL under the data dir (started
 * here, or the one another process already runs there), with its `svc` database.
 */
export async function openDatabase(config: Config, logger: Logger, opts: { poolSize?: number; /** embedded only; default true */ createCluster?: boolean } = {}): Promise<Database> {
  const max = opts.poolSize ?? config.DATABASE_POOL_SIZE;
  if (config.DATABASE_URL) {
    const db = createDb(config.DATABASE_URL, { max, logger });
    return { db, url: config.DATABASE_URL, embedded: false, close: () => db.close() };
  }
  const cluster = await startEmbeddedPostgres(config.dataDir, { logger, ...(opts.createCluster === false ? { create: false } : {}) });
  const admin = new pg.Client(cluster.url());
  admin.on('error', () => {}); // a lost connection fails the query in progress; it must not end the process
  await admin.connect();
  try {
    const q = clusterQueries.databaseExists(EMBEDDED_DATABASE);
    const exists = await admin.query(q.text, q.values);
    if (exists.rowCount === 0) {
      await admin.query(`CREATE DATABASE ${EMBEDDED_DATABASE}`).catch((err: { code?: string }) => {
        if (err.code !== '42P04') throw err; // created concurrently by another process
      });
    }
  } finally {
    await admin.end();
  }
  const url = cluster.url(EMBEDDED_DATABASE);
  const db = createDb(url, { max, logger });
  return {
    db,
    url,
    embedded: true,
    async close() {
      await db.close();
      // Another process's postmaster (and its clients) is left alone: stop() is a no-op then.
      if (cluster.owned) await connectionsClosed(cluster.url(), logger);
      await cluster.stop();
    },
  };
}

/**
 * Waits (at most `timeoutMs`) until no other client is connected. A pool's `end()` (ours,
 * pg-boss's) resolves before its connections have closed; stopping the cluster then makes
 * postgres terminate them, and each pool logs that as an error.
 */
async function connectionsClosed(url: string, logger: Logger, timeoutMs = 3_000): Promise<void> {
  const admin = new pg.Client(url);
  admin.on('error', () => {}); // as above: the query in progress reports it
  try {
    await admin.connect();
    const q = clusterQueries.otherClientBackends();
    for (const deadline = performance.now() + timeoutMs; ; ) {
      const { n } = (await admin.query<{ n: number }>(q.text, q.values)).rows[0]!;
      if (n === 0) return;
      if (performance.now() > deadline) return logger.warn({ connections: n }, 'stopping the embedded database with clients still connected');
      await new Promise((r) => setTimeout(r, 10));
    }
  } catch (err) {
    logger.debug({ err: (err as Error).message }, 'could not check the embedded database for open connections');
  } finally {
    await admin.end().catch(() => {});
  }
}
