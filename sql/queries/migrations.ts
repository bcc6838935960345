import type { Query } from '../query.js';

/** An arbitrary constant: the advisory lock every migrating process takes (sql/queries/advisory-locks.ts). */
export const MIGRATION_LOCK = 7_301_447_112n;

export const migrationQueries = {
  createTable: (): Query => ({
    text: `CREATE TABLE IF NOT EXISTS schema_migrations (
      version integer PRIMARY KEY,
      name text NOT NULL,
      applied_at timestamptz NOT NULL DEFAULT now())`,
    values: [],
  }),
  applied: (): Query => ({ text: 'SELECT version FROM schema_migrations ORDER BY version', values: [] }),
  record: (version: number, name: string): Query => ({
    text: 'INSERT INTO schema_migrations (version, name) VALUES ($1, $2)',
    values: [version, name],
  }),
};
