import type { Query } from '../query.js';

export interface MergeAttemptRow {
  cr_id: string;
  project_id: string;
  strategy: 'fast-forward' | 'merge-commit' | 'up-to-date';
  base_commit_sha: string;
  head_commit_sha: string;
  merge_commit_sha: string;
  actor: string;
}

export const mergeAttemptQueries = {
  save: (a: MergeAttemptRow): Query => ({
    text: `INSERT INTO merge_attempts (cr_id, project_id, strategy, base_commit_sha, head_commit_sha, merge_commit_sha, actor)
      VALUES ($1, $2, $3, $4, $5, $6, $7)
      ON CONFLICT (cr_id) DO UPDATE SET strategy = EXCLUDED.strategy, base_commit_sha = EXCLUDED.base_commit_sha,
        head_commit_sha = EXCLUDED.head_commit_sha, merge_commit_sha = EXCLUDED.merge_commit_sha,
        actor = EXCLUDED.actor, created_at = now()`,
    values: [a.cr_id, a.project_id, a.strategy, a.base_commit_sha, a.head_commit_sha, a.merge_commit_sha, a.actor],
  }),
  get: (crId: string): Query => ({
    text: 'SELECT * FROM merge_attempts WHERE cr_id = $1',
    values: [crId],
  }),
  all: (): Query => ({ text: 'SELECT * FROM merge_attempts ORDER BY created_at', values: [] }),
  remove: (crId: string): Query => ({ text: 'DELETE FROM merge_attempts WHERE cr_id = $1', values: [crId] }),
};
