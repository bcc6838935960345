import type { Query } from '../query.js';

/** The install's identity and the sandboxes it still means to run (the orphan sweep). */
export const installQueries = {
  /**
   * The row's id mixed with the database's name: a database copied within a cluster (a
   * template clone, a restore beside the original) is another install and gets another id.
   */
  id: (): Query => ({ text: 'SELECT md5(install_id::text || current_database())::uuid::text AS install_id FROM install_identity', values: [] }),
  /** Which of `sandboxIds` have a live row (a session's, requested or started; or the pool's, in any state). */
  liveSandboxes: (sandboxIds: string[]): Query => ({
    text: `SELECT sandbox_id::text AS sandbox_id FROM session_sandboxes WHERE sandbox_id = ANY($1::uuid[]) AND state IN ('provisioning', 'active')
      UNION SELECT sandbox_id::text FROM pool_sandboxes WHERE sandbox_id = ANY($1::uuid[])`,
    values: [sandboxIds],
  }),
};
