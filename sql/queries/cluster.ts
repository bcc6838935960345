import type { Query } from '../query.js';

/** The embedded cluster as its owner sees it, on a maintenance connection. */
export const clusterQueries = {
  databaseExists: (name: string): Query => ({ text: 'SELECT 1 FROM pg_database WHERE datname = $1', values: [name] }),
  /** Client connections still open, other than the one asking. */
  otherClientBackends: (): Query => ({
    text: `SELECT count(*)::int AS n FROM pg_stat_activity WHERE backend_type = 'client backend' AND pid <> pg_backend_pid()`,
    values: [],
  }),
};
