import type { Query } from '../query.js';

export interface PoolRow {
  sandbox_id: string;
  project_id: string;
  provider: string;
  fingerprint: string;
  state: 'booting' | 'ready' | 'claimed';
  session_id: string | null;
  url: string | null;
  ref: string | null;
  key_sealed: string;
  labels: Record<string, string>;
  created_at: Date;
  ready_at: Date | null;
  claimed_at: Date | null;
}

/** The pool of prepared sandboxes (sql/090_pool_sandboxes.sql). */
export const poolQueries = {
  insert: (r: { sandboxId: string; projectId: string; provider: string; fingerprint: string; keySealed: string; labels: Record<string, string> }): Query => ({
    text: `INSERT INTO pool_sandboxes (sandbox_id, project_id, provider, fingerprint, state, key_sealed, labels)
      VALUES ($1, $2, $3, $4, 'booting', $5, $6::jsonb)`,
    values: [r.sandboxId, r.projectId, r.provider, r.fingerprint, r.keySealed, JSON.stringify(r.labels)],
  }),
  started: (sandboxId: string, url: string, ref: string): Query => ({
    text: 'UPDATE pool_sandboxes SET url = $2, ref = $3 WHERE sandbox_id = $1',
    values: [sandboxId, url, ref],
  }),
  ready: (sandboxId: string): Query => ({
    text: "UPDATE pool_sandboxes SET state = 'ready', ready_at = now() WHERE sandbox_id = $1 AND state = 'booting' RETURNING sandbox_id",
    values: [sandboxId],
  }),
  remove: (sandboxId: string): Query => ({ text: 'DELETE FROM pool_sandboxes WHERE sandbox_id = $1 RETURNING sandbox_id', values: [sandboxId] }),
  /**
   * Claims the oldest ready sandbox of the project booted as the session would be, for
   * `sessionId`, in the caller's transaction (SKIP LOCKED: two creates never get the same
   * one, and neither waits for the other). Nothing sets a claimed row ready again.
   */
  take: (projectId: string, provider: string, fingerprint: string, sessionId: string): Query => ({
    text: `UPDATE pool_sandboxes SET state = 'claimed', session_id = $4, claimed_at = now() WHERE sandbox_id = (
        SELECT sandbox_id FROM pool_sandboxes
        WHERE project_id = $1 AND provider = $2 AND fingerprint = $3 AND state = 'ready'
        ORDER BY ready_at, sandbox_id LIMIT 1 FOR UPDATE SKIP LOCKED)
      RETURNING sandbox_id`,
    values: [projectId, provider, fingerprint, sessionId],
  }),
  /** The session's claimed sandbox, out of the table at once: a retried provisioning never hands it over twice. */
  handOut: (sessionId: string): Query => ({
    text: "DELETE FROM pool_sandboxes WHERE session_id = $1 AND state = 'claimed' RETURNING *",
    values: [sessionId],
  }),
  /** Claimed rows whose session no longer waits for them (removed, stopped, failed, or a lost job). */
  staleClaims: (olderThanSeconds: number): Query => ({
    text: `SELECT p.* FROM pool_sandboxes p LEFT JOIN project_sessions s ON s.session_id = p.session_id
      WHERE p.state = 'claimed' AND (s.session_id IS NULL OR s.status <> 'provisioning' OR p.claimed_at < now() - make_interval(secs => $1))`,
    values: [olderThanSeconds],
  }),
  ofProvider: (provider: string): Query => ({
    text: 'SELECT * FROM pool_sandboxes WHERE provider = $1 ORDER BY created_at, sandbox_id',
    values: [provider],
  }),
  /** Projects whose manifest in force asks for a pool, and how many. */
  wanted: (): Query => ({
    text: `SELECT m.project_id::text AS project_id, (m.manifest->'sandbox'->>'pool')::int AS pool
      FROM project_manifests m JOIN projects p ON p.project_id = m.project_id
      WHERE (m.manifest->'sandbox'->>'pool')::int > 0 ORDER BY p.created_at, m.project_id`,
    values: [],
  }),
};
