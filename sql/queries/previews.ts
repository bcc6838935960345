import type { Query } from '../query.js';

/** Previews on their own origin: the dashboard's one-time codes (sql/058_preview_codes.sql). */
export const previewQueries = {
  insertCode: (c: { hash: Buffer; userId: string; projectId: string; sessionId: string; port: number; frameOrigin: string; path: string; expiresAt: Date }): Query => ({
    text: `INSERT INTO preview_codes (code_hash, user_id, project_id, session_id, port, frame_origin, path, expires_at)
      VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
    values: [c.hash, c.userId, c.projectId, c.sessionId, c.port, c.frameOrigin, c.path, c.expiresAt],
  }),
  sweepCodes: (): Query => ({ text: 'DELETE FROM preview_codes WHERE expires_at < now()', values: [] }),
  /** Single use: the row goes with the read. */
  redeemCode: (hash: Buffer): Query => ({
    text: `DELETE FROM preview_codes WHERE code_hash = $1 AND expires_at > now()
      RETURNING user_id, project_id, session_id, port, frame_origin, path`,
    values: [hash],
  }),
  /** The project a session belongs to (the preview origin knows only the session id). */
  projectOfSession: (sessionId: string): Query => ({
    text: 'SELECT project_id FROM project_sessions WHERE session_id = $1',
    values: [sessionId],
  }),
};
