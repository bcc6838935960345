-- Pause and resume (issue 22 item 1): what a stopped session's sandbox held that its
-- branch does not. The workspace itself is a commit on refs/svc/sessions/<id>/wip in the
-- project's state store (a bare repository of the server's, never served over smart
-- HTTP); this row names it and holds the runtime's conversation sealed with the server's
-- secret box, so every api and worker process can read it. Not a projection: it is not
-- rebuilt from events and goes when the session is removed or restarted with --fresh.
CREATE TABLE session_saved_state (
  session_id       text PRIMARY KEY,
  project_id       uuid NOT NULL,
  wip_sha          text,
  head_sha         text,
  skipped          jsonb NOT NULL DEFAULT '[]'::jsonb,
  conversation     text,
  conversation_bytes integer NOT NULL DEFAULT 0,
  runtime_version  text,
  -- The workspace path the conversation was held in (the process provider's changes per sandbox).
  workspace        text,
  saved_at         timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX session_saved_state_project ON session_saved_state (project_id);
