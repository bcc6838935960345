import type { Query } from '../query.js';

/** What the egress proxy needs from the database besides the manifest in force (manifest.ts). */
export const egressQueries = {
  /** The session a sandbox belongs to, only within the project the gateway named. */
  sessionOfSandbox: (sandboxId: string, projectId: string): Query => ({
    name: 'egress_session_of_sandbox',
    text: `SELECT sb.session_id FROM session_sandboxes sb JOIN project_sessions s USING (session_id)
      WHERE sb.sandbox_id = $1 AND s.project_id = $2`,
    values: [sandboxId, projectId],
  }),
};
