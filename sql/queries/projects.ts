import type { Query } from '../../infra/db/db.js';

const cols = 'project_id, account_id, name, slug, repo_url, repo_credentials_enc, default_branch, created_at, repo_managed';

export const projectQueries = {
  insert: (p: {
    projectId: string;
    accountId: string;
    name: string;
    slug: string;
    repoUrl: string | null;
    repoCredentialsEnc: string | null;
    defaultBranch: string;
    repoManaged?: boolean;
  }): Query => ({
    text: `INSERT INTO projects (project_id, account_id, name, slug, repo_url, repo_credentials_enc, default_branch, repo_managed)
      VALUES ($1, $2, $3, $4, $5, $6, $7, $8) RETURNING ${cols}`,
    values: [p.projectId, p.accountId, p.name, p.slug, p.repoUrl, p.repoCredentialsEnc, p.defaultBranch, p.repoManaged ?? false],
  }),
  byId: (projectId: string): Query => ({
    text: `SELECT ${cols} FROM projects WHERE project_id = $1`,
    values: [projectId],
  }),
  byIdOrSlug: (idOrSlug: string, isUuid: boolean): Query => ({
    name: isUuid ? 'project_by_id' : 'project_by_slug',
    text: `SELECT ${cols} FROM projects WHERE ${isUuid ? 'project_id = $1::uuid' : 'slug = $1'}`,
    values: [idOrSlug],
  }),
  listForUser: (userId: string): Query => ({
    text: `SELECT ${cols} FROM projects p
      WHERE EXISTS (SELECT 1 FROM memberships m WHERE m.account_id = p.account_id AND m.user_id = $1)
      ORDER BY p.created_at, p.project_id`,
    values: [userId],
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
