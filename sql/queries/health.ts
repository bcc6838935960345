import type { Query } from '../query.js';

/** `/readyz`: the database answers a statement. */
export const healthQueries = {
  ping: (): Query => ({ name: 'health_ping', text: 'SELECT 1 AS ok', values: [] }),
};
