import type { Query } from '../query.js';

export interface StatusRow {
  project_id: string;
  sha: string;
  context: string;
  state: 'pending' | 'success' | 'failure' | 'error';
  description: string | null;
  target_url: string | null;
  created_by: string;
  created_at: Date;
  updated_at: Date;
}

/** Commit statuses, check logs, and what the checks refresher reads. */
export const checkQueries = {
  upsertStatus: (s: { projectId: string; sha: string; context: string; state: string; description: string | null; targetUrl: string | null; actor: string }): Query => ({
    text: `INSERT INTO commit_statuses (project_id, sha, context, state, description, target_url, created_by)
      VALUES ($1, $2, $3, $4, $5, $6, $7)
      ON CONFLICT (project_id, sha, context) DO UPDATE SET state = EXCLUDED.state, description = EXCLUDED.description,
        target_url = EXCLUDED.target_url, created_by = EXCLUDED.created_by, updated_at = now()
      RETURNING *`,
    values: [s.projectId, s.sha, s.context, s.state, s.description, s.targetUrl, s.actor],
  }),
  statusesOf: (projectId: string, sha: string): Query => ({
    text: 'SELECT * FROM commit_statuses WHERE project_id = $1 AND sha = $2 ORDER BY context',
    values: [projectId, sha],
  }),
  /** The manifest in force and a commit's statuses, in one statement (the CR page's budget). */
  manifestAndStatuses: (projectId: string, sha: string | null): Query => ({
    text: `SELECT (SELECT manifest FROM project_manifests WHERE project_id = $1) AS manifest,
      COALESCE((SELECT json_agg(s ORDER BY s.context) FROM commit_statuses s WHERE s.project_id = $1 AND s.sha = $2), '[]'::json) AS statuses`,
    values: [projectId, sha],
  }),
  saveLog: (l: { runId: string; projectId: string; crId: string; body: string; truncated: boolean }): Query => ({
    text: `INSERT INTO check_logs (run_id, project_id, cr_id, body, truncated) VALUES ($1, $2, $3, $4, $5)
      ON CONFLICT (run_id) DO UPDATE SET body = EXCLUDED.body, truncated = EXCLUDED.truncated`,
    values: [l.runId, l.projectId, l.crId, l.body, l.truncated],
  }),
  getLog: (projectId: string, crId: string, runId: string): Query => ({
    text: 'SELECT body, truncated FROM check_logs WHERE project_id = $1 AND cr_id = $2 AND run_id = $3',
    values: [projectId, crId, runId],
  }),
  deleteLog: (projectId: string, crId: string, runId: string): Query => ({
    text: 'DELETE FROM check_logs WHERE project_id = $1 AND cr_id = $2 AND run_id = $3',
    values: [projectId, crId, runId],
  }),
  /**
   * Open CRs the refresher follows: those of projects whose manifest in force names checks
   * or required statuses (a pending merge-when-green needs one or the other).
   */
  openCrsWithChecks: (limit: number): Query => ({
    text: `SELECT c.project_id, c.cr_id FROM change_requests c
      JOIN project_manifests m ON m.project_id = c.project_id
      WHERE c.status = 'open'
        AND (jsonb_array_length(COALESCE(m.manifest -> 'checks', '[]'::jsonb)) > 0
          OR jsonb_array_length(COALESCE(m.manifest -> 'review' -> 'required_statuses', '[]'::jsonb)) > 0)
      ORDER BY c.project_id, c.number LIMIT $1`,
    values: [limit],
  }),
};
