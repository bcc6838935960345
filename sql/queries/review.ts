import type { Query } from '../query.js';

/** One `cr_comments` row, as the projection writes it (projections/review.ts). */
export interface CommentRow {
  comment_id: string;
  project_id: string;
  cr_id: string;
  body: string;
  commit_sha: string | null;
  path: string | null;
  line: number | null;
  side: 'LEFT' | 'RIGHT' | null;
  head_sha: string | null;
  author_kind: 'user' | 'agent';
  author_id: string;
  session_id: string | null;
  answers_round: number | null;
  resolved: boolean;
  resolved_by: string | null;
  resolved_at: string | null;
  created_at: string;
}

/** One `cr_reviews` row. */
export interface ReviewRow {
  project_id: string;
  cr_id: string;
  user_id: string;
  head_sha: string | null;
  reviewed_at: string;
}

const commentCols =
  'comment_id, project_id, cr_id, body, commit_sha, path, line, side, head_sha, author_kind, author_id, session_id, answers_round, resolved, resolved_by, resolved_at, created_at';

export const reviewQueries = {
  insertComment: (r: CommentRow): Query => ({
    text: `INSERT INTO cr_comments (${commentCols}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)`,
    values: [r.comment_id, r.project_id, r.cr_id, r.body, r.commit_sha, r.path, r.line, r.side, r.head_sha, r.author_kind, r.author_id, r.session_id, r.answers_round, r.resolved, r.resolved_by, r.resolved_at, r.created_at],
  }),
  setResolved: (commentId: string, resolved: boolean, by: string | null, at: string | null): Query => ({
    text: 'UPDATE cr_comments SET resolved = $2, resolved_by = $3, resolved_at = $4 WHERE comment_id = $1',
    values: [commentId, resolved, by, at],
  }),
  upsertReview: (r: ReviewRow): Query => ({
    text: `INSERT INTO cr_reviews (project_id, cr_id, user_id, head_sha, reviewed_at) VALUES ($1, $2, $3, $4, $5)
      ON CONFLICT (cr_id, user_id) DO UPDATE SET head_sha = EXCLUDED.head_sha, reviewed_at = EXCLUDED.reviewed_at`,
    values: [r.project_id, r.cr_id, r.user_id, r.head_sha, r.reviewed_at],
  }),
  /** A CR's comments, oldest first. */
  commentsOf: (projectId: string, crId: string): Query => ({
    text: `SELECT ${commentCols} FROM cr_comments WHERE project_id = $1 AND cr_id = $2 ORDER BY created_at, comment_id`,
    values: [projectId, crId],
  }),
  commentById: (projectId: string, crId: string, commentId: string): Query => ({
    text: `SELECT ${commentCols} FROM cr_comments WHERE project_id = $1 AND cr_id = $2 AND comment_id = $3`,
    values: [projectId, crId, commentId],
  }),
  reviewOf: (crId: string, userId: string): Query => ({
    text: 'SELECT project_id, cr_id, user_id, head_sha, reviewed_at FROM cr_reviews WHERE cr_id = $1 AND user_id = $2',
    values: [crId, userId],
  }),
  /** A CR's comments and one person's review row in one statement (the CR page pays one round trip). */
  pageOf: (projectId: string, crId: string, userId: string): Query => ({
    name: 'review_page_of',
    text: `SELECT
        (SELECT coalesce(json_agg(c ORDER BY c.created_at, c.comment_id), '[]'::json) FROM (SELECT ${commentCols} FROM cr_comments WHERE project_id = $1 AND cr_id = $2) c) AS comments,
        (SELECT row_to_json(r) FROM (SELECT project_id, cr_id, user_id, head_sha, reviewed_at FROM cr_reviews WHERE cr_id = $2 AND user_id = $3) r) AS review`,
    values: [projectId, crId, userId],
  }),
  // --- rebuild ---
  createScratch: (): Query => ({
    text: `CREATE TEMP TABLE cr_comments_rebuilt (LIKE cr_comments INCLUDING DEFAULTS) ON COMMIT DROP;
      CREATE TEMP TABLE cr_reviews_rebuilt (LIKE cr_reviews INCLUDING DEFAULTS) ON COMMIT DROP`,
    values: [],
  }),
  insertMany: (table: 'cr_comments_rebuilt' | 'cr_reviews_rebuilt', rows: object[]): Query => ({
    text: `INSERT INTO ${table} SELECT * FROM jsonb_populate_recordset(null::${table === 'cr_comments_rebuilt' ? 'cr_comments' : 'cr_reviews'}, $1::jsonb) r
      WHERE EXISTS (SELECT 1 FROM projects p WHERE p.project_id = r.project_id)`,
    values: [JSON.stringify(rows)],
  }),
  diffScratch: (limit: number): Query => ({
    text: `(SELECT 'live_only' AS side, 'cr_comments' AS "table", l.comment_id::text AS id FROM (TABLE cr_comments EXCEPT TABLE cr_comments_rebuilt) l)
      UNION ALL
      (SELECT 'rebuilt_only', 'cr_comments', r.comment_id::text FROM (TABLE cr_comments_rebuilt EXCEPT TABLE cr_comments) r)
      UNION ALL
      (SELECT 'live_only', 'cr_reviews', l.cr_id || '/' || l.user_id FROM (TABLE cr_reviews EXCEPT TABLE cr_reviews_rebuilt) l)
      UNION ALL
      (SELECT 'rebuilt_only', 'cr_reviews', r.cr_id || '/' || r.user_id FROM (TABLE cr_reviews_rebuilt EXCEPT TABLE cr_reviews) r)
      LIMIT $1`,
    values: [limit],
  }),
  replaceLive: (): Query => ({
    text: 'DELETE FROM cr_comments; DELETE FROM cr_reviews; INSERT INTO cr_comments TABLE cr_comments_rebuilt; INSERT INTO cr_reviews TABLE cr_reviews_rebuilt',
    values: [],
  }),
};
