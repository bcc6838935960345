-- Sessions (issue 10). The projections `project_sessions` and `session_sandboxes`
-- (003) get the columns the session stream folds into; the rest is operational state
-- that is not event-sourced: per-account caps and the credentials of each sandbox.

ALTER TABLE project_sessions
  DROP COLUMN error,
  ADD COLUMN error            jsonb,
  ADD COLUMN base_commit_sha  text,
  ADD COLUMN trigger          text,
  ADD COLUMN last_activity_at timestamptz NOT NULL;
CREATE INDEX project_sessions_live ON project_sessions (account_id) WHERE status IN ('provisioning', 'running');
CREATE INDEX project_sessions_running_idle ON project_sessions (last_activity_at) WHERE status = 'running';

ALTER TABLE session_sandboxes
  DROP COLUMN error,
  ADD COLUMN error jsonb,
  -- Provider identity (pid, container id, pod name): how a restarted server finds it again.
  ADD COLUMN ref   text;

-- Concurrent live sessions (provisioning + running) per account; null: SVC_SESSION_CAP.
ALTER TABLE accounts ADD COLUMN session_cap integer CHECK (session_cap >= 0);

-- One row per sandbox incarnation: its service key (SVC_TOKEN) as a sha256 for
-- authenticating the daemon's calls and sealed (infra/secrets.ts) for signing
-- X-Svc-User-Context, and the id of the project token injected as SVC_CLI_TOKEN.
-- Revoking a sandbox's credentials sets revoked_at here and on the token.
CREATE TABLE sandbox_credentials (
  sandbox_id   uuid PRIMARY KEY,
  session_id   text NOT NULL,
  project_id   uuid NOT NULL REFERENCES projects (project_id) ON DELETE CASCADE,
  user_id      uuid NOT NULL REFERENCES users (user_id) ON DELETE CASCADE,
  key_hash     bytea NOT NULL UNIQUE,
  key_sealed   text NOT NULL,
  cli_token_id uuid REFERENCES tokens (token_id) ON DELETE SET NULL,
  created_at   timestamptz NOT NULL DEFAULT now(),
  revoked_at   timestamptz
);
CREATE INDEX sandbox_credentials_session ON sandbox_credentials (session_id) WHERE revoked_at IS NULL;
