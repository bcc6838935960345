import type { Query } from '../query.js';

/** Project manifests, secrets and the per-stream lock of the feature's event log. */
export const manifestQueries = {
  get: (projectId: string): Query => ({
    text: 'SELECT project_id, manifest, valid_sha, source_sha, errors, warnings, synced_at FROM project_manifests WHERE project_id = $1',
    values: [projectId],
  }),
  /** A valid manifest: everything moves. */
  saveValid: (p: { projectId: string; manifest: unknown; sha: string | null; warnings: unknown }): Query => ({
    text: `INSERT INTO project_manifests (project_id, manifest, valid_sha, source_sha, errors, warnings, synced_at)
      VALUES ($1, $2::jsonb, $3, $3, '[]', $4::jsonb, now())
      ON CONFLICT (project_id) DO UPDATE SET manifest = EXCLUDED.manifest, valid_sha = EXCLUDED.valid_sha,
        source_sha = EXCLUDED.source_sha, errors = '[]', warnings = EXCLUDED.warnings, synced_at = now()`,
    values: [p.projectId, JSON.stringify(p.manifest), p.sha, JSON.stringify(p.warnings)],
  }),
  /** An invalid one: the manifest in force stays; only the report of the attempt moves. */
  saveInvalid: (p: { projectId: string; sha: string; errors: unknown; warnings: unknown }): Query => ({
    text: `INSERT INTO project_manifests (project_id, manifest, valid_sha, source_sha, errors, warnings, synced_at)
      VALUES ($1, NULL, NULL, $2, $3::jsonb, $4::jsonb, now())
      ON CONFLICT (project_id) DO UPDATE SET source_sha = EXCLUDED.source_sha, errors = EXCLUDED.errors,
        warnings = EXCLUDED.warnings, synced_at = now()`,
    values: [p.projectId, p.sha, JSON.stringify(p.errors), JSON.stringify(p.warnings)],
  }),
  allProjects: (): Query => ({ text: 'SELECT project_id FROM projects WHERE repo_url IS NOT NULL ORDER BY created_at', values: [] }),
  /** Someone who may act for the project when no person does (a scheduled fire): the account's first owner. */
  accountOwner: (accountId: string): Query => ({
    text: `SELECT user_id FROM memberships WHERE account_id = $1 ORDER BY (role = 'owner') DESC, created_at LIMIT 1`,
    values: [accountId],
  }),
};

export const secretQueries = {
  list: (projectId: string): Query => ({
    text: 'SELECT name, updated_at FROM project_secrets WHERE project_id = $1 ORDER BY name',
    values: [projectId],
  }),
  values: (projectId: string): Query => ({
    text: 'SELECT name, value_enc FROM project_secrets WHERE project_id = $1 ORDER BY name',
    values: [projectId],
  }),
  revision: (projectId: string): Query => ({
    text: 'SELECT revision FROM project_secret_revisions WHERE project_id = $1',
    values: [projectId],
  }),
  /** Bumps the revision; the row lock it takes serialises the project's secret changes. */
  bump: (projectId: string): Query => ({
    text: `INSERT INTO project_secret_revisions (project_id, revision) VALUES ($1, 1)
      ON CONFLICT (project_id) DO UPDATE SET revision = project_secret_revisions.revision + 1 RETURNING revision`,
    values: [projectId],
  }),
  upsert: (projectId: string, name: string, valueEnc: string): Query => ({
    text: `INSERT INTO project_secrets (project_id, name, value_enc, updated_at) VALUES ($1, $2, $3, now())
      ON CONFLICT (project_id, name) DO UPDATE SET value_enc = EXCLUDED.value_enc, updated_at = now()`,
    values: [projectId, name, valueEnc],
  }),
  remove: (projectId: string, name: string): Query => ({
    text: 'DELETE FROM project_secrets WHERE project_id = $1 AND name = $2',
    values: [projectId, name],
  }),
  /** Rotation: every sealed value, a page at a time. */
  page: (afterProject: string, afterName: string, limit: number): Query => ({
    text: `SELECT project_id, name, value_enc FROM project_secrets WHERE (project_id, name) > ($1::uuid, $2)
      ORDER BY project_id, name LIMIT $3`,
    values: [afterProject, afterName, limit],
  }),
  /** Compare-and-swap: a value changed meanwhile is left to its writer (sealed under the current key already). */
  reseal: (projectId: string, name: string, oldEnc: string, newEnc: string): Query => ({
    text: 'UPDATE project_secrets SET value_enc = $4 WHERE project_id = $1 AND name = $2 AND value_enc = $3',
    values: [projectId, name, oldEnc, newEnc],
  }),
  repoCredentials: (): Query => ({
    text: 'SELECT project_id, repo_credentials_enc FROM projects WHERE repo_credentials_enc IS NOT NULL',
    values: [],
  }),
  resealRepoCredentials: (projectId: string, oldEnc: string, newEnc: string): Query => ({
    text: 'UPDATE projects SET repo_credentials_enc = $3 WHERE project_id = $1 AND repo_credentials_enc = $2',
    values: [projectId, oldEnc, newEnc],
  }),
};
