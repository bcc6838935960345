import type { Query } from '../query.js';

/** Browser sign-in: passwords, dashboard sessions, failed sign-ins, CLI login requests. */
export const dashboardQueries = {
  userByEmail: (email: string): Query => ({
    text: 'SELECT user_id, email, name, password_hash FROM users WHERE email = lower($1)',
    values: [email],
  }),
  setPassword: (email: string, hash: string): Query => ({
    text: 'UPDATE users SET password_hash = $2 WHERE email = lower($1) RETURNING user_id',
    values: [email, hash],
  }),
  insertSession: (s: { sessionId: string; userId: string; secretHash: Buffer; csrf: string; tokenId: string; tokenEnc: string; expiresAt: Date }): Query => ({
    text: `INSERT INTO dashboard_sessions (session_id, user_id, secret_hash, csrf_token, token_id, token_enc, expires_at)
      VALUES ($1, $2, $3, $4, $5, $6, $7)`,
    values: [s.sessionId, s.userId, s.secretHash, s.csrf, s.tokenId, s.tokenEnc, s.expiresAt],
  }),
  /** A live session with its user, and whether it is due its once-a-minute touch (`stale`). */
  liveSession: (sessionId: string): Query => ({
    name: 'dashboard_live_session',
    text: `SELECT s.session_id, s.secret_hash, s.csrf_token, s.token_enc, s.user_id, u.email, u.name AS user_name,
        s.last_seen_at < now() - interval '1 minute' AS stale
      FROM dashboard_sessions s JOIN users u USING (user_id) JOIN tokens t ON t.token_id = s.token_id
      WHERE s.session_id = $1 AND s.revoked_at IS NULL AND s.expires_at > now()
        AND t.revoked_at IS NULL AND (t.expires_at IS NULL OR t.expires_at > now())`,
    values: [sessionId],
  }),
  /**
   * At most once a minute: the session's last_seen_at and its sign-in token's last_used_at
   * (pages call services, not the API, so the token's own touch no longer runs for them;
   * the tokens page shows when this browser was last used).
   */
  touchSession: (sessionId: string): Query => ({
    text: `WITH s AS (UPDATE dashboard_sessions SET last_seen_at = now()
        WHERE session_id = $1 AND last_seen_at < now() - interval '1 minute' RETURNING token_id)
      UPDATE tokens SET last_used_at = now() WHERE token_id IN (SELECT token_id FROM s)`,
    values: [sessionId],
  }),
  /** Signs a browser out: the session and the token it called the API with. */
  revokeSession: (sessionId: string): Query => ({
    text: `WITH s AS (UPDATE dashboard_sessions SET revoked_at = now() WHERE session_id = $1 AND revoked_at IS NULL RETURNING token_id)
      UPDATE tokens SET revoked_at = now() WHERE token_id IN (SELECT token_id FROM s) AND revoked_at IS NULL`,
    values: [sessionId],
  }),
  revokeSessionsOfUser: (userId: string): Query => ({
    text: `WITH s AS (UPDATE dashboard_sessions SET revoked_at = now() WHERE user_id = $1 AND revoked_at IS NULL RETURNING token_id)
      UPDATE tokens SET revoked_at = now() WHERE token_id IN (SELECT token_id FROM s) AND revoked_at IS NULL`,
    values: [userId],
  }),
  recordFailure: (email: string, client: string): Query => ({
    text: 'INSERT INTO sign_in_failures (email, client) VALUES (lower($1), $2)',
    values: [email, client],
  }),
  /**
   * One client's failures in the window: for this email (and seconds since the last one),
   * for any email (and seconds until the oldest ages out). Never another client's.
   */
  failures: (email: string, client: string, windowSeconds: number): Query => ({
    text: `SELECT
        count(*) FILTER (WHERE email = lower($1))::int AS by_pair,
        coalesce(extract(epoch FROM now() - max(failed_at) FILTER (WHERE email = lower($1))), 0)::float8 AS since_last_pair,
        count(*)::int AS by_client,
        coalesce(extract(epoch FROM (min(failed_at) + make_interval(secs => $3) - now())), 0)::float8 AS client_retry_after
      FROM sign_in_failures
      WHERE client = $2 AND failed_at > now() - make_interval(secs => $3)`,
    values: [email, client, windowSeconds],
  }),
  /** After a sign-in: this client's failures for the email, and any a day old. */
  clearFailures: (email: string, client: string): Query => ({
    text: 'DELETE FROM sign_in_failures WHERE (email = lower($1) AND client = $2) OR failed_at < now() - interval \'1 day\'',
    values: [email, client],
  }),
  /** Registers a login the CLI started: its callback, hostname, user code (hashed) and PKCE challenge. */
  insertCliLogin: (l: { state: string; callback: string; hostname: string; userCodeHash: Buffer; codeChallenge: string; expiresAt: Date }): Query => ({
    text: `INSERT INTO cli_logins (state, callback, hostname, user_code_hash, code_challenge, expires_at) VALUES ($1, $2, $3, $4, $5, $6)
      ON CONFLICT (state) DO NOTHING RETURNING state`,
    values: [l.state, l.callback, l.hostname, l.userCodeHash, l.codeChallenge, l.expiresAt],
  }),
  /** Logins waiting for a decision, counted up to `cap` (registration is unauthenticated: bounded). */
  openCliLoginCount: (cap: number): Query => ({
    text: `SELECT count(*)::int AS n FROM (SELECT 1 FROM cli_logins WHERE used_at IS NULL AND expires_at > now() LIMIT $1) x`,
    values: [cap],
  }),
  /** A login still open for a decision (registered by a CLI, unused, unexpired, not locked by wrong codes). */
  openCliLogin: (state: string, maxAttempts: number): Query => ({
    text: `SELECT state, callback, hostname, expires_at FROM cli_logins
      WHERE state = $1 AND code_challenge IS NOT NULL AND used_at IS NULL AND expires_at > now() AND code_attempts < $2`,
    values: [state, maxAttempts],
  }),
  /**
   * Approves an open login whose user code matches, once: records the approver and the
   * hash of the one-time code the CLI will redeem within two minutes.
   */
  approveCliLogin: (state: string, userId: string, userCodeHash: Buffer, codeHash: Buffer, maxAttempts: number): Query => ({
    text: `UPDATE cli_logins SET used_at = now(), outcome = 'approved', user_id = $2, code_hash = $4,
        expires_at = least(expires_at, now() + interval '2 minutes')
      WHERE state = $1 AND user_code_hash = $3 AND code_challenge IS NOT NULL AND used_at IS NULL AND expires_at > now() AND code_attempts < $5
      RETURNING state, callback, hostname`,
    values: [state, userId, userCodeHash, codeHash, maxAttempts],
  }),
  /** A wrong user code: counted; past the limit the login can no longer be approved. */
  wrongCliLoginCode: (state: string): Query => ({
    text: `UPDATE cli_logins SET code_attempts = code_attempts + 1 WHERE state = $1 AND used_at IS NULL RETURNING code_attempts`,
    values: [state],
  }),
  denyCliLogin: (state: string, userId: string): Query => ({
    text: `UPDATE cli_logins SET used_at = now(), outcome = 'denied', user_id = $2
      WHERE state = $1 AND code_challenge IS NOT NULL AND used_at IS NULL AND expires_at > now()
      RETURNING state, callback, hostname`,
    values: [state, userId],
  }),
  /** Redeems an approved login's code once, before it expires, with the PKCE challenge it was registered with. */
  redeemCliLogin: (state: string, codeHash: Buffer, codeChallenge: string): Query => ({
    text: `UPDATE cli_logins SET redeemed_at = now()
      WHERE state = $1 AND code_hash = $2 AND code_challenge = $3 AND outcome = 'approved' AND redeemed_at IS NULL AND expires_at > now()
      RETURNING user_id, hostname`,
    values: [state, codeHash, codeChallenge],
  }),
  /** Logins expired a day ago or more: abandoned (never approved, or never redeemed) or done. */
  sweepCliLogins: (): Query => ({
    text: `DELETE FROM cli_logins WHERE expires_at < now() - interval '1 day'`,
    values: [],
  }),
  /** Where a project's live view starts: its newest event in the feed's order. */
  lastProjectEvent: (projectId: string): Query => ({
    text: `SELECT global_position FROM events WHERE project_id = $1
      ORDER BY transaction_id DESC, global_position DESC LIMIT 1`,
    values: [projectId],
  }),
};
