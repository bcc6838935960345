-- A sandbox that failed to start keeps the tail of its log (secrets redacted) for the
-- session's error (issue 21). On the row, never in an event: the event log is forever and
-- is read by anyone who can read the session's history. Goes with the session's row.
CREATE TABLE session_failure_logs (
  session_id text PRIMARY KEY REFERENCES project_sessions (session_id) ON DELETE CASCADE,
  sandbox_id uuid NOT NULL,
  log        text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
