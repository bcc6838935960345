-- Issue 23: checks and commit statuses. Check runs themselves are events on the CR stream
-- (Check*, ChangeRequestAutoMerge*); what lives here is outside the event log on purpose.

-- Outside CI's commit statuses (GitHub's shape): one row per (project, commit, context),
-- the latest report wins. Plain state, not events: a status belongs to a commit, not a CR.
CREATE TABLE commit_statuses (
  project_id  uuid NOT NULL REFERENCES projects (project_id) ON DELETE CASCADE,
  sha         text NOT NULL CHECK (sha ~ '^[0-9a-f]{40}([0-9a-f]{24})?$'),
  context     text NOT NULL CHECK (context <> ''),
  state       text NOT NULL CHECK (state IN ('pending', 'success', 'failure', 'error')),
  description text,
  target_url  text,
  created_by  uuid NOT NULL,
  created_at  timestamptz NOT NULL DEFAULT now(),
  updated_at  timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (project_id, sha, context)
);

-- A check run's output: bounded (the server keeps the head and the tail), known secret
-- values masked before it is stored, deletable. The events point here by run_id.
CREATE TABLE check_logs (
  run_id     uuid PRIMARY KEY,
  project_id uuid NOT NULL REFERENCES projects (project_id) ON DELETE CASCADE,
  cr_id      uuid NOT NULL,
  body       text NOT NULL,
  truncated  boolean NOT NULL DEFAULT false,
  created_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX check_logs_cr ON check_logs (cr_id);
