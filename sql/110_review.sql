-- Review comments and reviews (issue 23 items 5–6, docs/api.md "Review"). Both tables are
-- projections of the CR stream's review events (ChangeRequestCommented,
-- ChangeRequestCommentResolved/Unresolved, ChangeRequestReviewed), written in the
-- transaction that appends them and rebuilt by `projections rebuild`. No foreign key to
-- change_requests (the rebuild replaces those rows); a project's removal takes them along.
CREATE TABLE cr_comments (
  comment_id    uuid PRIMARY KEY,
  project_id    uuid NOT NULL REFERENCES projects (project_id) ON DELETE CASCADE,
  cr_id         uuid NOT NULL,
  body          text NOT NULL,
  commit_sha    text,
  path          text,
  line          integer,
  side          text CHECK (side IN ('LEFT', 'RIGHT')),
  head_sha      text,
  author_kind   text NOT NULL CHECK (author_kind IN ('user', 'agent')),
  author_id     uuid NOT NULL,
  session_id    text,
  answers_round integer,
  resolved      boolean NOT NULL DEFAULT false,
  resolved_by   uuid,
  resolved_at   timestamptz,
  created_at    timestamptz NOT NULL
);
CREATE INDEX cr_comments_cr ON cr_comments (cr_id, created_at);

-- Per person and CR: the head they last reviewed (their last comment's, or "mark reviewed").
CREATE TABLE cr_reviews (
  project_id  uuid NOT NULL REFERENCES projects (project_id) ON DELETE CASCADE,
  cr_id       uuid NOT NULL,
  user_id     uuid NOT NULL,
  head_sha    text,
  reviewed_at timestamptz NOT NULL,
  PRIMARY KEY (cr_id, user_id)
);
