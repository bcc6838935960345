import type { Query } from '../query.js';
import { PROJECT_COLUMN_NAMES } from './projects.js';
import type { ProjectRecord } from '../../domain/project.js';

export const accountQueries = {
  /** Up to two accounts: whether a second tenant exists. */
  countUpToTwo: (): Query => ({ name: 'accounts_count_up_to_two', text: 'SELECT count(*)::int AS n FROM (SELECT 1 FROM accounts LIMIT 2) a', values: [] }),
  insertAccount: (accountId: string, name: string): Query => ({
    text: 'INSERT INTO accounts (account_id, name) VALUES ($1, $2)',
    values: [accountId, name],
  }),
  /** Inserts the user unless the email exists; returns the user either way. */
  upsertUser: (userId: string, email: string, name: string): Query => ({
    text: `INSERT INTO users (user_id, email, name) VALUES ($1, lower($2), $3)
      ON CONFLICT (email) DO UPDATE SET email = EXCLUDED.email
      RETURNING user_id, email, name, (xmax = 0) AS created`,
    values: [userId, email, name],
  }),
  insertMembership: (accountId: string, userId: string, role: 'owner' | 'member'): Query => ({
    text: 'INSERT INTO memberships (account_id, user_id, role) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING',
    values: [accountId, userId, role],
  }),
  accountsOfUser: (userId: string): Query => ({
    text: `SELECT a.account_id, a.name, m.role FROM accounts a JOIN memberships m USING (account_id)
      WHERE m.user_id = $1 ORDER BY m.created_at, a.account_id`,
    values: [userId],
  }),
  isMember: (accountId: string, userId: string): Query => ({
    name: 'is_member',
    text: 'SELECT 1 AS ok FROM memberships WHERE account_id = $1 AND user_id = $2',
    values: [accountId, userId],
  }),
};

/**
 * The live token whose hash is parameter `hash` (`$1`, ...), with the columns `byHash`
 * documents: one text, so the statement that authenticates and loads the request's project
 * together (`tokenQueries.byHashWithProject`) applies exactly the rule of `byHash`.
 */
export const liveTokenByHash = (hash: string): string =>
  `SELECT t.token_id, t.user_id, t.project_id, t.token_hash, t.last_used_at, u.email, u.name AS user_name,
        t.grade, t.sandbox_id, c.session_id, cs.sandbox_id AS credential_sandbox_id, sb.provider AS credential_provider
      FROM tokens t JOIN users u USING (user_id)
        LEFT JOIN sandbox_credentials c ON c.sandbox_id = t.sandbox_id
        CROSS JOIN LATERAL (SELECT COALESCE(t.sandbox_id,
          (SELECT x.sandbox_id FROM sandbox_credentials x WHERE x.cli_token_id = t.token_id LIMIT 1)) AS sandbox_id) cs
        LEFT JOIN session_sandboxes sb ON sb.sandbox_id = cs.sandbox_id
      WHERE t.token_hash = ${hash} AND t.revoked_at IS NULL AND (t.expires_at IS NULL OR t.expires_at > now())`;

/** A row of `liveTokenByHash`. */
export interface LiveTokenRow {
  token_id: string;
  user_id: string;
  project_id: string | null;
  token_hash: Buffer;
  last_used_at: Date | null;
  email: string;
  user_name: string;
  grade: 'person' | 'agent';
  sandbox_id: string | null;
  session_id: string | null;
  credential_sandbox_id: string | null;
  credential_provider: string | null;
}

/**
 * `cr`: the project's CR with number `$3` joined too (`to_json(c) AS cr`), for a request
 * whose route reads it first (`GET` of a CR by number): the same statement, one round trip.
 */
const tokenWithProjectById = (cr: boolean) => `SELECT tok.*, m.user_id IS NOT NULL AS member, to_json(p) AS project${cr ? ', to_json(c) AS cr' : ''}
  FROM (${liveTokenByHash('$1')}) tok
    LEFT JOIN projects p ON p.project_id = coalesce(tok.project_id, $2::uuid)
    LEFT JOIN memberships m ON m.account_id = p.account_id AND m.user_id = tok.user_id${
      cr ? '\n    LEFT JOIN change_requests c ON c.project_id = p.project_id AND c.number = $3' : ''}`;

const tokenWithProjectBySlug = (cr: boolean) => `SELECT tok.*, coalesce(p.member, false) AS member, p.project${cr ? ', to_json(c) AS cr' : ''}
  FROM (${liveTokenByHash('$1')}) tok
    LEFT JOIN LATERAL (
      SELECT o.project_id, to_json(o) AS project,
          EXISTS (SELECT 1 FROM memberships m WHERE m.account_id = o.account_id AND m.user_id = tok.user_id) AS member
        FROM projects o WHERE o.project_id = tok.project_id
      UNION ALL
      (SELECT u.project_id, to_json(u), true
        FROM memberships m JOIN projects u ON u.account_id = m.account_id AND u.slug = $2
        WHERE tok.project_id IS NULL AND m.user_id = tok.user_id
        ORDER BY m.created_at, u.account_id LIMIT 1)) p ON true${
      cr ? '\n    LEFT JOIN change_requests c ON c.project_id = p.project_id AND c.number = $3' : ''}`;

const TOKEN_WITH_PROJECT = {
  byId: tokenWithProjectById(false),
  byIdWithCr: tokenWithProjectById(true),
  bySlug: tokenWithProjectBySlug(false),
  bySlugWithCr: tokenWithProjectBySlug(true),
};

export const tokenQueries = {
  insert: (t: {
    tokenId: string;
    userId: string;
    projectId: string | null;
    name: string;
    hash: Buffer;
    expiresAt: Date | null;
    grade: 'person' | 'agent';
    sandboxId: string | null;
  }): Query => ({
    text: `INSERT INTO tokens (token_id, user_id, project_id, name, token_hash, expires_at, grade, sandbox_id)
      VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING token_id, name, project_id, created_at, expires_at`,
    values: [t.tokenId, t.userId, t.projectId, t.name, t.hash, t.expiresAt, t.grade, t.sandboxId],
  }),
  /** Of `tokenIds`, those no longer live (revoked, expired or deleted): their feeds are closed. */
  deadAmong: (tokenIds: string[]): Query => ({
    name: 'tokens_dead_among',
    text: `SELECT id::text AS token_id FROM unnest($1::uuid[]) AS id
      WHERE NOT EXISTS (SELECT 1 FROM tokens t WHERE t.token_id = id
        AND t.revoked_at IS NULL AND (t.expires_at IS NULL OR t.expires_at > now()))`,
    values: [tokenIds],
  }),
  /**
   * A live token by the hash of its value, with its owner, its grade and (agent tokens) its
   * sandbox and session; and, for the gateway rule (api/gateway.ts), the sandbox the
   * credential belongs to and that sandbox's provider: the token's own `sandbox_id`, else
   * the sandbox whose CLI token it is (a token minted before 040), as
   * `sandboxCredentialQueries.sandboxOfToken` and `providerOfSandbox` read them. One
   * statement: every authenticated request runs it.
   */
  byHash: (hash: Buffer): Query => ({
    name: 'token_by_hash',
    text: liveTokenByHash('$1'),
    values: [hash],
  }),
  /**
   * `byHash` and, in the same statement, the project a project-scoped request names, as
   * `projectForCaller` (services/projects/access.ts) reads it for this token, with whether
   * the token's user is a member of that project's account (`member`): a project token's own
   * project (whatever `ref` says: the rule compares); for a user token, by uuid the project
   * with that id, whoever's it is (a primary-key probe; the rule serves it only to a member),
   * by slug the project with that slug among the user's accounts, the earliest membership
   * first (`projectQueries.byIdOrSlugForUser`). Nothing is decided here. The project comes
   * back as the JSON of its row (`to_json`: one field to describe and parse instead of
   * nine). No row: no live token. `ref`: a lowercase uuid (`isUuid`) or a slug.
   */
  byHashWithProject: (hash: Buffer, ref: string, isUuid: boolean, crNumber: number | null = null): Query => {
    const cr = crNumber !== null;
    return {
      name: `token_by_hash_project_by_${isUuid ? 'id' : 'slug'}${cr ? '_cr' : ''}`,
      text: TOKEN_WITH_PROJECT[`${isUuid ? 'byId' : 'bySlug'}${cr ? 'WithCr' : ''}`],
      values: cr ? [hash, ref, crNumber] : [hash, ref],
    };
  },
  /** The user's live tokens (not revoked, not expired), newest first. */
  listForUser: (userId: string): Query => ({
    text: `SELECT t.token_id, t.name, t.project_id, t.created_at, t.expires_at, t.last_used_at, t.sandbox_id, c.session_id
      FROM tokens t LEFT JOIN sandbox_credentials c ON c.sandbox_id = t.sandbox_id
      WHERE t.user_id = $1 AND t.revoked_at IS NULL AND (t.expires_at IS NULL OR t.expires_at > now())
      ORDER BY t.created_at DESC, t.token_id`,
    values: [userId],
  }),
  /** Revokes one of the user's tokens; no row for another user's or an unknown token. */
  revokeForUser: (userId: string, tokenId: string): Query => ({
    text: `UPDATE tokens SET revoked_at = now() WHERE user_id = $1 AND token_id = $2 AND revoked_at IS NULL
      RETURNING token_id`,
    values: [userId, tokenId],
  }),
  /** At most one write a minute per token, however busy it is. */
  touch: (tokenId: string): Query => ({
    name: 'token_touch',
    text: `UPDATE tokens SET last_used_at = now()
      WHERE token_id = $1 AND (last_used_at IS NULL OR last_used_at < now() - interval '1 minute')`,
    values: [tokenId],
  }),
};

/**
 * A row of `byHashWithProject`: the token's, with the project (null: none), whether the
 * token's user is a member of its account, and (asked for) the CR's row as JSON (null: none;
 * decoded by `decodeCrRow`).
 */
export interface LiveTokenProjectRow extends LiveTokenRow {
  project: ProjectRecord | null;
  member: boolean;
  cr?: Record<string, unknown> | null;
}

export function decodeLiveTokenProjectRow(r: Record<string, unknown>): LiveTokenProjectRow {
  const { project, ...rest } = r as unknown as LiveTokenRow & { member: boolean; project: Record<string, unknown> | null; cr?: Record<string, unknown> | null };
  return { ...rest, project: project ? projectOfJson(project) : null };
}

/** The project's columns as the other statements return them (created_at a Date; JSON carries its ISO text). */
function projectOfJson(j: Record<string, unknown>): ProjectRecord {
  const out: Record<string, unknown> = {};
  for (const c of PROJECT_COLUMN_NAMES) out[c] = j[c];
  out.created_at = new Date(j.created_at as string);
  return out as unknown as ProjectRecord;
}
