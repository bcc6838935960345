import type { Query } from '../query.js';

/** A project row's columns (`ProjectRecord`), in table order. */
export const PROJECT_COLUMN_NAMES = ['project_id', 'account_id', 'name', 'slug', 'repo_url', 'repo_credentials_enc', 'default_branch', 'created_at', 'repo_managed'] as const;
const cols = PROJECT_COLUMN_NAMES.join(', ');

/** A project row to insert. */
export interface NewProject {
  projectId: string;
  accountId: string;
  name: string;
  slug: string;
  repoUrl: string | null;
  repoCredentialsEnc: string | null;
  defaultBranch: string;
  repoManaged?: boolean;
}

export const projectQueries = {
  insert: (p: NewProject): Query => ({
    text: `INSERT INTO projects (project_id, account_id, name, slug, repo_url, repo_credentials_enc, default_branch, repo_managed)
      VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING ${cols}`,
    values: [p.projectId, p.accountId, p.name, p.slug, p.repoUrl, p.repoCredentialsEnc, p.defaultBranch, p.repoManaged ?? false],
  }),
  byId: (projectId: string): Query => ({
    text: `SELECT ${cols} FROM projects WHERE project_id = $1`,
    values: [projectId],
  }),
  /**
   * A project by uuid or slug among the projects of the user's accounts (a slug is unique
   * per account; if two of the user's accounts use it, the earliest membership wins).
   */
  byIdOrSlugForUser: (idOrSlug: string, isUuid: boolean, userId: string): Query => ({
    name: isUuid ? 'project_by_id_for_user' : 'project_by_slug_for_user',
    text: `SELECT ${cols.split(', ').map((c) => `p.${c}`).join(', ')} FROM projects p
      JOIN memberships m ON m.account_id = p.account_id AND m.user_id = $2
      WHERE ${isUuid ? 'p.project_id = $1::uuid' : 'p.slug = $1'}
      ORDER BY m.created_at, p.account_id LIMIT 1`,
    values: [idOrSlug, userId],
  }),
  /** Slugs of one account equal to `base` or `base-<n>`: to pick a free one in one read. */
  slugsLike: (accountId: string, base: string): Query => ({
    text: `SELECT slug FROM projects WHERE account_id = $1 AND (slug = $2 OR (starts_with(slug, $2 || '-') AND substr(slug, length($2) + 2) ~ '^[0-9]{1,6}$'))`,
    values: [accountId, base],
  }),
  listForUser: (userId: string, limit: number | null = null, after: { created_at: string; project_id: string } | null = null): Query => ({
    text: `SELECT ${cols}, to_char(created_at AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"') AS cursor_at FROM projects p
      WHERE EXISTS (SELECT 1 FROM memberships m WHERE m.account_id = p.account_id AND m.user_id = $1)
        AND ($3::timestamptz IS NULL OR (p.created_at, p.project_id) > ($3::timestamptz, $4::uuid))
      ORDER BY p.created_at, p.project_id
      LIMIT $2`,
    values: [userId, limit, after?.created_at ?? null, after?.project_id ?? null],
  }),
  /** Deleting a project (its CRs, sessions and tokens cascade). */
  remove: (projectId: string): Query => ({
    text: 'DELETE FROM projects WHERE project_id = $1 RETURNING project_id',
    values: [projectId],
  }),
  sessionInProject: (projectId: string, sessionId: string): Query => ({
    text: 'SELECT 1 AS ok FROM project_sessions WHERE project_id = $1 AND session_id = $2',
    values: [projectId, sessionId],
  }),
};
