-- What a session is listed under: its first prompt, given at create or the first one sent
-- to its agent (those are not events: prompts to the agent are not in the session's
-- stream). Not a projection: no reference to project_sessions, so a projection rebuild
-- keeps it; removed with its session or its project.
CREATE TABLE session_titles (
  session_id text PRIMARY KEY,
  project_id uuid NOT NULL REFERENCES projects (project_id) ON DELETE CASCADE,
  title      text NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now()
);
