import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { createDb, type Db } from '../../infra/db/db.js';

export interface TestDb {
  db: Db;
  url: string;
  name: string;
  drop(): Promise<void>;
}

function maintenanceUrl(): string {
  const url = process.env.SVC_TEST_PG_URL;
  if (!url) throw new Error('SVC_TEST_PG_URL is not set: run tests through mocha with .mocharc.json (global fixtures)');
  return url;
}

export function databaseUrl(name: string): string {
  const u = new URL(maintenanceUrl());
  u.pathname = `/${name}`;
  return u.toString();
}

/** A fresh, fully migrated database cloned from the run's template. */
export async function createTestDb(opts: { max?: number } = {}): Promise<TestDb> {
  const name = `t_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client(maintenanceUrl());
  await admin.connect();
  try {
    // The name is generated above (hex only), never input.
    await admin.query(`CREATE DATABASE ${name} TEMPLATE svc_test_template STRATEGY FILE_COPY`);
  } finally {
    await admin.end();
  }
  const url = databaseUrl(name);
  const db = createDb(url, { max: opts.max ?? 10 });
  return {
    db,
    url,
    name,
    async drop() {
      await db.close();
      const c = new pg.Client(maintenanceUrl());
      await c.connect();
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      await c.end();
    },
  };
}
