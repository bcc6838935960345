import type { Query } from '../query.js';

/** Columns of `project_sessions` in table order after migration 061. */
export const SESSION_COLUMNS = [
  'session_id', 'account_id', 'project_id', 'status', 'base_ref', 'branch_name', 'agent_name', 'agent_model',
  'sandbox_url', 'created_by', 'created_at', 'updated_at', 'stream_version', 'error', 'base_commit_sha', 'trigger',
  'last_activity_at', 'agent_state',
] as const;
export const SANDBOX_COLUMNS = ['sandbox_id', 'session_id', 'provider', 'state', 'url', 'created_at', 'updated_at', 'error', 'ref'] as const;

type SessionTable = 'project_sessions' | 'sessions_rebuilt';
type SandboxTable = 'session_sandboxes' | 'sandboxes_rebuilt';

const setAll = (cols: readonly string[], key: string) =>
  cols.filter((c) => c !== key).map((c) => `${c} = EXCLUDED.${c}`).join(', ');

/** A session row with its current sandbox (the newest incarnation), for the API. */
const selectWithSandbox = `SELECT s.*, sb.sandbox_id AS sb_id, sb.provider AS sb_provider, sb.state AS sb_state,
    sb.url AS sb_url, sb.ref AS sb_ref, st.title AS title
  FROM project_sessions s
  LEFT JOIN session_titles st ON st.session_id = s.session_id
  LEFT JOIN LATERAL (SELECT * FROM session_sandboxes x WHERE x.session_id = s.session_id
    ORDER BY x.created_at DESC, x.sandbox_id DESC LIMIT 1) sb ON true`;

export const sessionQueries = {
  /** The session's title, once: its first prompt (later ones leave it). */
  noteTitle: (sessionId: string, projectId: string, title: string): Query => ({
    name: 'session_title_note',
    text: 'INSERT INTO session_titles (session_id, project_id, title) VALUES ($1, $2, $3) ON CONFLICT (session_id) DO NOTHING',
    values: [sessionId, projectId, title],
  }),
  dropTitle: (sessionId: string): Query => ({
    text: 'DELETE FROM session_titles WHERE session_id = $1',
    values: [sessionId],
  }),
  /** Of `sandboxIds`, those no longer serving a running session (stopped, restarted, removed). */
  sandboxesNotLiveAmong: (sandboxIds: string[]): Query => ({
    name: 'sandboxes_not_live_among',
    text: `SELECT id::text AS sandbox_id FROM unnest($1::uuid[]) AS id
      WHERE NOT EXISTS (SELECT 1 FROM session_sandboxes sb JOIN project_sessions s ON s.session_id = sb.session_id
        WHERE sb.sandbox_id = id AND sb.state = 'active' AND s.status = 'running')`,
    values: [sandboxIds],
  }),
  upsert: (row: object): Query => ({
    name: 'session_upsert',
    text: `INSERT INTO project_sessions SELECT * FROM jsonb_populate_record(null::project_sessions, $1::jsonb) r
      WHERE EXISTS (SELECT 1 FROM projects p WHERE p.project_id = r.project_id)
      ON CONFLICT (session_id) DO UPDATE SET ${setAll(SESSION_COLUMNS, 'session_id')}`,
    values: [JSON.stringify(row)],
  }),
  upsertSandboxes: (rows: object[]): Query => ({
    name: 'session_sandboxes_upsert',
    text: `INSERT INTO session_sandboxes SELECT * FROM jsonb_populate_recordset(null::session_sandboxes, $1::jsonb) r
      WHERE EXISTS (SELECT 1 FROM project_sessions s WHERE s.session_id = r.session_id)
      ON CONFLICT (sandbox_id) DO UPDATE SET ${setAll(SANDBOX_COLUMNS, 'sandbox_id')}`,
    values: [JSON.stringify(rows)],
  }),
  delete: (sessionId: string): Query => ({
    text: 'DELETE FROM project_sessions WHERE session_id = $1',
    values: [sessionId],
  }),

  byId: (projectId: string, sessionId: string): Query => ({
    name: 'session_by_id',
    text: `${selectWithSandbox} WHERE s.project_id = $1 AND s.session_id = $2`,
    values: [projectId, sessionId],
  }),
  /** Newest first; `status` null: all. */
  list: (projectId: string, status: string | null, limit: number): Query => ({
    text: `${selectWithSandbox} WHERE s.project_id = $1 AND ($2::session_status IS NULL OR s.status = $2::session_status)
      ORDER BY s.created_at DESC, s.session_id DESC LIMIT $3`,
    values: [projectId, status, limit],
  }),
  /** The account row locked for the rest of the transaction: creates of one account queue here. */
  lockAccountCap: (accountId: string): Query => ({
    text: 'SELECT session_cap FROM accounts WHERE account_id = $1 FOR UPDATE',
    values: [accountId],
  }),
  liveCount: (accountId: string): Query => ({
    text: `SELECT count(*)::int AS n FROM project_sessions WHERE account_id = $1 AND status IN ('provisioning', 'running')`,
    values: [accountId],
  }),
  setAccountCap: (accountId: string, cap: number | null): Query => ({
    text: 'UPDATE accounts SET session_cap = $2 WHERE account_id = $1',
    values: [accountId, cap],
  }),
  /** The name and address a session's git identity is made from. */
  userIdentity: (userId: string): Query => ({
    name: 'session_user_identity',
    text: 'SELECT name, email FROM users WHERE user_id = $1',
    values: [userId],
  }),
  /** The failed sandbox's log tail (one per session: the newest failure's). */
  saveFailureLog: (sessionId: string, sandboxId: string, log: string): Query => ({
    text: `INSERT INTO session_failure_logs (session_id, sandbox_id, log) SELECT $1, $2, $3
      WHERE EXISTS (SELECT 1 FROM project_sessions WHERE session_id = $1)
      ON CONFLICT (session_id) DO UPDATE SET sandbox_id = EXCLUDED.sandbox_id, log = EXCLUDED.log, created_at = now()`,
    values: [sessionId, sandboxId, log],
  }),
  failureLog: (sessionId: string): Query => ({
    name: 'session_failure_log',
    text: 'SELECT log FROM session_failure_logs WHERE session_id = $1',
    values: [sessionId],
  }),
  /** Sessions a restarted worker must look at: every one still provisioning or running. */
  unsettled: (): Query => ({
    text: `SELECT session_id, project_id, status FROM project_sessions WHERE status IN ('provisioning', 'running')
      ORDER BY created_at`,
    values: [],
  }),
  /** A project's running sessions (their sandboxes receive secret changes). */
  runningOfProject: (projectId: string): Query => ({
    text: `SELECT session_id FROM project_sessions WHERE project_id = $1 AND status = 'running' ORDER BY created_at`,
    values: [projectId],
  }),
  /**
   * Running sessions idle longer than their project's timeout: the manifest in force's
   * `[sandbox] idle_timeout_minutes`, else `defaultMinutes` (SVC_SESSION_IDLE_MINUTES).
   */
  idle: (now: Date, defaultMinutes: number, limit: number): Query => ({
    text: `SELECT s.session_id, s.project_id FROM project_sessions s
      LEFT JOIN project_manifests m ON m.project_id = s.project_id
      WHERE s.status = 'running'
        AND s.last_activity_at < $1::timestamptz - make_interval(secs => 60 * COALESCE((m.manifest #>> '{sandbox,idle_timeout_minutes}')::float8, $2::float8))
      ORDER BY s.last_activity_at LIMIT $3`,
    values: [now, defaultMinutes, limit],
  }),
  lastActivity: (sessionId: string): Query => ({
    name: 'session_last_activity',
    text: 'SELECT last_activity_at, status FROM project_sessions WHERE session_id = $1',
    values: [sessionId],
  }),

  // Rebuild (projections/rebuild.ts)
  createScratch: (): Query => ({
    text: `CREATE TEMP TABLE sessions_rebuilt (LIKE project_sessions INCLUDING DEFAULTS) ON COMMIT DROP;
      CREATE TEMP TABLE sandboxes_rebuilt (LIKE session_sandboxes INCLUDING DEFAULTS) ON COMMIT DROP`,
    values: [],
  }),
  insertMany: (table: SessionTable, rows: object[]): Query => ({
    text: `INSERT INTO ${table} SELECT * FROM jsonb_populate_recordset(null::project_sessions, $1::jsonb) r
      WHERE EXISTS (SELECT 1 FROM projects p WHERE p.project_id = r.project_id)`,
    values: [JSON.stringify(rows)],
  }),
  insertManySandboxes: (table: SandboxTable, rows: object[]): Query => ({
    text: `INSERT INTO ${table} SELECT * FROM jsonb_populate_recordset(null::session_sandboxes, $1::jsonb) r
      WHERE EXISTS (SELECT 1 FROM ${table === 'sandboxes_rebuilt' ? 'sessions_rebuilt' : 'project_sessions'} s WHERE s.session_id = r.session_id)`,
    values: [JSON.stringify(rows)],
  }),
  diffScratch: (limit: number): Query => ({
    text: `(SELECT 'live_only' AS side, 'project_sessions' AS "table", l.session_id AS id FROM (TABLE project_sessions EXCEPT TABLE sessions_rebuilt) l)
      UNION ALL
      (SELECT 'rebuilt_only', 'project_sessions', r.session_id FROM (TABLE sessions_rebuilt EXCEPT TABLE project_sessions) r)
      UNION ALL
      (SELECT 'live_only', 'session_sandboxes', l.sandbox_id::text FROM (TABLE session_sandboxes EXCEPT TABLE sandboxes_rebuilt) l)
      UNION ALL
      (SELECT 'rebuilt_only', 'session_sandboxes', r.sandbox_id::text FROM (TABLE sandboxes_rebuilt EXCEPT TABLE session_sandboxes) r)
      LIMIT $1`,
    values: [limit],
  }),
  deleteAll: (): Query => ({ text: 'DELETE FROM project_sessions', values: [] }),
  copyScratchToLive: (): Query => ({
    text: 'INSERT INTO project_sessions TABLE sessions_rebuilt; INSERT INTO session_sandboxes TABLE sandboxes_rebuilt',
    values: [],
  }),
};

export const sandboxCredentialQueries = {
  insert: (c: { sandboxId: string; sessionId: string; projectId: string; userId: string; keyHash: Buffer; keySealed: string; cliTokenId: string; llmKeyHash: Buffer }): Query => ({
    text: `INSERT INTO sandbox_credentials (sandbox_id, session_id, project_id, user_id, key_hash, key_sealed, cli_token_id, llm_key_hash)
      VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
    values: [c.sandboxId, c.sessionId, c.projectId, c.userId, c.keyHash, c.keySealed, c.cliTokenId, c.llmKeyHash],
  }),
  /** A live gateway key by hash, with its session's account. */
  byLlmHash: (hash: Buffer): Query => ({
    name: 'sandbox_llm_key_by_hash',
    text: `SELECT c.sandbox_id, c.session_id, c.project_id, c.user_id, p.account_id, c.llm_key_hash FROM sandbox_credentials c
      JOIN projects p ON p.project_id = c.project_id
      WHERE c.llm_key_hash = $1 AND c.revoked_at IS NULL`,
    values: [hash],
  }),
  /** A live sandbox key by hash, with its project. */
  byHash: (hash: Buffer): Query => ({
    name: 'sandbox_key_by_hash',
    text: `SELECT sandbox_id, session_id, project_id, user_id, key_hash FROM sandbox_credentials
      WHERE key_hash = $1 AND revoked_at IS NULL`,
    values: [hash],
  }),
  sealedKey: (sandboxId: string): Query => ({
    name: 'sandbox_key_sealed',
    text: 'SELECT key_sealed FROM sandbox_credentials WHERE sandbox_id = $1 AND revoked_at IS NULL',
    values: [sandboxId],
  }),
  /**
   * A clone credential: an agent-grade project token for the sandbox's project and user,
   * naming the sandbox, minted only while the sandbox's key is live. FOR SHARE orders it against a
   * revocation: one that committed first leaves nothing to mint from; one that waits on
   * this lock then revokes the new row too (its tokens statement runs after, see below).
   */
  mintCloneToken: (t: { sandboxId: string; tokenId: string; name: string; hash: Buffer; expiresAt: Date }): Query => ({
    text: `WITH live AS (SELECT sandbox_id, project_id, user_id FROM sandbox_credentials
        WHERE sandbox_id = $1 AND revoked_at IS NULL FOR SHARE)
      INSERT INTO tokens (token_id, user_id, project_id, name, token_hash, expires_at, sandbox_id, grade)
      SELECT $2, user_id, project_id, $3, $4, $5, sandbox_id, 'agent' FROM live
      RETURNING token_id, expires_at`,
    values: [t.sandboxId, t.tokenId, t.name, t.hash, t.expiresAt],
  }),
  /**
   * Revoking is two statements: the sandbox keys first (which waits on a clone credential
   * being minted), then, under a fresh snapshot that sees such a token, every live token of
   * those sandboxes: their project tokens and every clone credential minted for them.
   */
  revokeSessionKeys: (sessionId: string): Query => ({
    text: 'UPDATE sandbox_credentials SET revoked_at = now() WHERE session_id = $1 AND revoked_at IS NULL',
    values: [sessionId],
  }),
  revokeSessionTokens: (sessionId: string): Query => ({
    text: `UPDATE tokens SET revoked_at = now() WHERE revoked_at IS NULL AND (
        token_id IN (SELECT cli_token_id FROM sandbox_credentials WHERE session_id = $1)
        OR sandbox_id IN (SELECT sandbox_id FROM sandbox_credentials WHERE session_id = $1))`,
    values: [sessionId],
  }),
  /** The sandbox (and its provider) a token was minted for: its CLI token or a clone credential; no row for a person's token. */
  sandboxOfToken: (tokenId: string): Query => ({
    name: 'sandbox_of_token',
    text: `SELECT x.sandbox_id, sb.provider FROM (
        SELECT sandbox_id FROM sandbox_credentials WHERE cli_token_id = $1
        UNION ALL SELECT sandbox_id FROM tokens WHERE token_id = $1 AND sandbox_id IS NOT NULL) x
      LEFT JOIN session_sandboxes sb ON sb.sandbox_id = x.sandbox_id LIMIT 1`,
    values: [tokenId],
  }),
  /** The provider running a sandbox (null: unknown). */
  providerOfSandbox: (sandboxId: string): Query => ({
    name: 'provider_of_sandbox',
    text: 'SELECT provider FROM session_sandboxes WHERE sandbox_id = $1',
    values: [sandboxId],
  }),
  revokeSandboxKeys: (sandboxId: string): Query => ({
    text: 'UPDATE sandbox_credentials SET revoked_at = now() WHERE sandbox_id = $1 AND revoked_at IS NULL',
    values: [sandboxId],
  }),
  revokeSandboxTokens: (sandboxId: string): Query => ({
    text: `UPDATE tokens SET revoked_at = now() WHERE revoked_at IS NULL AND (
        token_id IN (SELECT cli_token_id FROM sandbox_credentials WHERE sandbox_id = $1) OR sandbox_id = $1)`,
    values: [sandboxId],
  }),
};
