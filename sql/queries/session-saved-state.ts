import type { Query } from '../query.js';

/** `session_saved_state` (migration 080): one row per paused session. */
export interface SavedStateRow {
  session_id: string;
  project_id: string;
  wip_sha: string | null;
  head_sha: string | null;
  skipped: { path: string; bytes: number; reason: string }[];
  conversation: string | null;
  conversation_bytes: number;
  runtime_version: string | null;
  workspace: string | null;
  saved_at: Date;
}

export const savedStateQueries = {
  upsert: (r: Omit<SavedStateRow, 'saved_at'>): Query => ({
    text: `INSERT INTO session_saved_state (session_id, project_id, wip_sha, head_sha, skipped, conversation, conversation_bytes, runtime_version, workspace, saved_at)
      VALUES ($1, $2, $3, $4, $5::jsonb, $6, $7, $8, $9, now())
      ON CONFLICT (session_id) DO UPDATE SET wip_sha = EXCLUDED.wip_sha, head_sha = EXCLUDED.head_sha, skipped = EXCLUDED.skipped,
        conversation = EXCLUDED.conversation, conversation_bytes = EXCLUDED.conversation_bytes,
        runtime_version = EXCLUDED.runtime_version, workspace = EXCLUDED.workspace, saved_at = now()`,
    values: [r.session_id, r.project_id, r.wip_sha, r.head_sha, JSON.stringify(r.skipped), r.conversation, r.conversation_bytes, r.runtime_version, r.workspace],
  }),
  bySession: (sessionId: string): Query => ({
    text: 'SELECT * FROM session_saved_state WHERE session_id = $1',
    values: [sessionId],
  }),
  /** What the session page and `svc sessions info` show: everything but the sealed conversation. */
  summary: (sessionId: string): Query => ({
    text: `SELECT session_id, wip_sha, head_sha, skipped, conversation IS NOT NULL AS has_conversation, conversation_bytes,
        runtime_version, saved_at FROM session_saved_state WHERE session_id = $1`,
    values: [sessionId],
  }),
  remove: (sessionId: string): Query => ({
    text: 'DELETE FROM session_saved_state WHERE session_id = $1',
    values: [sessionId],
  }),
};
