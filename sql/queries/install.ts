import type { Query } from '../query.js';

/** The install's identity and the sandboxes it still means to run (the orphan sweep). */
export const installQueries = {
  id: (): Query => ({ text: 'SELECT install_id::text AS install_id FROM install_identity', values: [] }),
  /** Which of `sandboxIds` have a live row (requested or started, not stopped or failed). */
  liveSandboxes: (sandboxIds: string[]): Query => ({
    text: "SELECT sandbox_id::text AS sandbox_id FROM session_sandboxes WHERE sandbox_id = ANY($1::uuid[]) AND state IN ('provisioning', 'active')",
    values: [sandboxIds],
  }),
};
