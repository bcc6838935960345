-- CPU time a sandbox used, where its provider reports it (docs/models.md "Cost"): read
-- when the sandbox is stopped, before it is torn down. Providers that report none (process,
-- bwrap, kubernetes) leave no row, and a session's `cpu_seconds` is null then. Operational
-- state, not events: a rebuild never touches it. No foreign key: a removed session's
-- sandboxes still cost what they cost.
CREATE TABLE sandbox_cpu (
  sandbox_id  uuid PRIMARY KEY,
  session_id  text NOT NULL,
  cpu_seconds double precision NOT NULL CHECK (cpu_seconds >= 0),
  recorded_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX sandbox_cpu_session ON sandbox_cpu (session_id);
