/** What a merge left in the database: the CR's event types, its `cr.merge` jobs. */
import type { TestDb } from './db.js';

export const eventTypes = async (db: TestDb['db'], crId: string) =>
  (await db.rows<{ type: string }>({ text: 'SELECT type FROM events WHERE stream_id = $1 ORDER BY stream_position', values: [`cr-${crId}`] })).map((r) => r.type);

export const mergeJobs = (db: TestDb['db'], crId: string) =>
  db.rows<{ state: string; retry_count: number; output: { ok: boolean } | null }>({
    text: `SELECT state, retry_count, output FROM pgboss.job WHERE name = 'cr.merge' AND data->>'cr_id' = $1`,
    values: [crId],
  });
