-- Outcomes per agent, model, trigger and person (docs/insights.md). A projection of the
-- event log kept after the fact, never on the append path: a reader catches it up to the
-- log's commit-safe horizon before it answers (projections/insights.ts). Every fact keeps
-- the recorded_at of the event it comes from, so `as_of` is a filter on these rows, and
-- the agent, model, trigger and person it counts for, copied from the session behind it.
-- Money comes from llm_usage itself (cost, currency), joined to insight_sessions.

-- Who a session counts for: what its SessionCreated said, and whether it ended yet.
CREATE TABLE insight_sessions (
  session_id text PRIMARY KEY,
  project_id uuid NOT NULL,
  account_id uuid NOT NULL,
  agent      text NOT NULL,
  model      text,
  trigger    text,
  person     uuid NOT NULL,
  ended      boolean NOT NULL
);

-- Who a CR counts for (its origin session's, else its opener), and when it was opened by
-- its own clock (the time to merge is merged_at minus this).
CREATE TABLE insight_crs (
  cr_id      uuid PRIMARY KEY,
  project_id uuid NOT NULL,
  account_id uuid NOT NULL,
  session_id text,
  agent      text,
  model      text,
  trigger    text,
  person     uuid NOT NULL,
  opened_at  timestamptz NOT NULL
);

-- Each check run's name, and whether it is the first run of that name on its CR.
CREATE TABLE insight_check_runs (
  run_id uuid PRIMARY KEY,
  cr_id  uuid NOT NULL,
  name   text NOT NULL,
  first  boolean NOT NULL
);
CREATE INDEX insight_check_runs_cr_name ON insight_check_runs (cr_id, name);

-- One dated fact per event that counts: opened, merged (with its seconds), closed (+1) and
-- reopened (-1 to closed), a round sent to the agent, a first run that failed, a queue
-- ejection, a session's first end.
CREATE TABLE insight_facts (
  global_position bigint PRIMARY KEY,
  kind        text NOT NULL,
  weight      smallint NOT NULL,
  project_id  uuid NOT NULL,
  account_id  uuid NOT NULL,
  cr_id       uuid,
  session_id  text,
  agent       text,
  model       text,
  trigger     text,
  person      uuid,
  seconds     double precision,
  recorded_at timestamptz NOT NULL
);
CREATE INDEX insight_facts_project_time ON insight_facts (project_id, recorded_at);
CREATE INDEX insight_facts_account_time ON insight_facts (account_id, recorded_at);
CREATE INDEX insight_facts_opened_session ON insight_facts (session_id, recorded_at) WHERE kind = 'opened';
-- The facts a count cannot be summed from: times to merge (a median) and sessions' ends.
-- Covering: read from the index alone.
CREATE INDEX insight_facts_project_kind ON insight_facts (project_id, kind, recorded_at)
  INCLUDE (seconds, session_id, agent, model, trigger, person) WHERE kind IN ('merged', 'session_ended');
CREATE INDEX insight_facts_account_kind ON insight_facts (account_id, kind, recorded_at)
  INCLUDE (seconds, session_id, agent, model, trigger, person) WHERE kind IN ('merged', 'session_ended');

-- The facts summed per UTC hour and per UTC minute, by group: a window reads its whole
-- hours, then the whole minutes at its two edges, then the facts of the last partial
-- minutes, so a read costs the hours and groups it spans, not the events in it.
CREATE TABLE insight_buckets (
  project_id uuid NOT NULL,
  account_id uuid NOT NULL,
  span       text NOT NULL CHECK (span IN ('hour', 'minute')),
  start      timestamptz NOT NULL,
  kind       text NOT NULL,
  agent      text,
  model      text,
  trigger    text,
  person     uuid,
  n          integer NOT NULL
);
CREATE UNIQUE INDEX insight_buckets_key ON insight_buckets (project_id, span, start, kind, agent, model, trigger, person) NULLS NOT DISTINCT;
CREATE INDEX insight_buckets_account ON insight_buckets (account_id, span, start);

-- How far the projection has read the log (the commit-safe order: transaction id, position).
CREATE TABLE insight_checkpoint (
  id       boolean PRIMARY KEY DEFAULT true CHECK (id),
  txid     xid8 NOT NULL,
  position bigint NOT NULL
);
INSERT INTO insight_checkpoint (id, txid, position) VALUES (true, '0', 0);
