import pg from 'pg';
import type { Config } from './config.js';
import { createDb, type Db } from './db/db.js';
import { startEmbeddedPostgres } from './db/embedded.js';
import type { Logger } from './logger.js';

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
export async function openDatabase(config: Config, logger: Logger, opts: { poolSize?: number } = {}): Promise<Database> {
  const max = opts.poolSize ?? config.DATABASE_POOL_SIZE;
  if (config.DATABASE_URL) {
    const db = createDb(config.DATABASE_URL, { max, logger });
    return { db, url: config.DATABASE_URL, embedded: false, close: () => db.close() };
  }
  const cluster = await startEmbeddedPostgres(config.dataDir, { logger });
  const admin = new pg.Client(cluster.url());
  await admin.connect();
  try {
    const exists = await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [EMBEDDED_DATABASE]);
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
      await cluster.stop();
    },
  };
}
