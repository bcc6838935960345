-- Projections of the event log. Every row here can be rebuilt from `events`
-- (`svc-server projections rebuild`); nothing writes them but the projectors.
CREATE TYPE session_status AS ENUM
  ('queued', 'branching', 'provisioning', 'running', 'stopped', 'failed', 'completed');
CREATE TYPE sandbox_state AS ENUM ('provisioning', 'active', 'stopped', 'error', 'archived');
CREATE TYPE cr_status AS ENUM ('open', 'merged', 'closed');

CREATE TABLE project_sessions (
  session_id   text PRIMARY KEY,
  account_id   uuid NOT NULL,
  project_id   uuid NOT NULL REFERENCES projects (project_id) ON DELETE CASCADE,
  status       session_status NOT NULL,
  base_ref     text NOT NULL,
  branch_name  text NOT NULL,
  agent_name   text NOT NULL,
  agent_model  text,
  sandbox_url  text,
  error        text,
  created_by   uuid NOT NULL,
  created_at   timestamptz NOT NULL,
  updated_at   timestamptz NOT NULL,
  stream_version bigint NOT NULL
);
CREATE INDEX project_sessions_project ON project_sessions (project_id, status);
CREATE INDEX project_sessions_account ON project_sessions (account_id);

CREATE TABLE session_sandboxes (
  sandbox_id  uuid PRIMARY KEY,
  session_id  text NOT NULL REFERENCES project_sessions (session_id) ON DELETE CASCADE,
  provider    text NOT NULL,
  state       sandbox_state NOT NULL,
  url         text,
  error       text,
  created_at  timestamptz NOT NULL,
  updated_at  timestamptz NOT NULL
);
CREATE INDEX session_sandboxes_session ON session_sandboxes (session_id);

CREATE TABLE change_requests (
  cr_id             uuid PRIMARY KEY,
  account_id        uuid NOT NULL,
  project_id        uuid NOT NULL REFERENCES projects (project_id) ON DELETE CASCADE,
  number            integer NOT NULL CHECK (number > 0),
  title             text NOT NULL CHECK (title <> ''),
  description       text NOT NULL DEFAULT '',
  base_ref          text NOT NULL,
  head_ref          text NOT NULL CHECK (head_ref <> base_ref),
  status            cr_status NOT NULL DEFAULT 'open',
  head_commit_sha   text,
  base_commit_sha   text,
  origin_session_id text REFERENCES project_sessions (session_id) ON DELETE SET NULL,
  created_by        uuid NOT NULL,
  merged_at         timestamptz,
  merged_by         uuid,
  merge_commit_sha  text,
  closed_at         timestamptz,
  closed_by         uuid,
  metadata          jsonb NOT NULL DEFAULT '{}',
  created_at        timestamptz NOT NULL DEFAULT now(),
  updated_at        timestamptz NOT NULL DEFAULT now(),
  -- The CR stream's version this row reflects (not part of the API object).
  stream_version    bigint NOT NULL
);
CREATE INDEX change_requests_account ON change_requests (account_id);
CREATE INDEX change_requests_project ON change_requests (project_id);
CREATE INDEX change_requests_project_status ON change_requests (project_id, status);
CREATE UNIQUE INDEX change_requests_project_number ON change_requests (project_id, number);
