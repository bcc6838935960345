-- A merge the worker computed and is about to publish (or has published) to the base
-- branch. Written before the remote ref moves, deleted in the transaction that appends
-- `ChangeRequestMerged`; a retried job that finds one checks whether the base already
-- holds the merge and records it once.
CREATE TABLE merge_attempts (
  cr_id            uuid PRIMARY KEY,
  project_id       uuid NOT NULL REFERENCES projects (project_id) ON DELETE CASCADE,
  strategy         text NOT NULL CHECK (strategy IN ('fast-forward', 'merge-commit', 'up-to-date')),
  base_commit_sha  text NOT NULL,
  head_commit_sha  text NOT NULL,
  merge_commit_sha text NOT NULL,
  actor            uuid NOT NULL,
  created_at       timestamptz NOT NULL DEFAULT now()
);
