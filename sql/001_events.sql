-- The append-only event log. `streams` holds each stream's version for optimistic
-- concurrency; `events` refuses UPDATE, DELETE and TRUNCATE.
CREATE TABLE streams (
  stream_id   text PRIMARY KEY,
  stream_type text NOT NULL,
  project_id  uuid,
  version     bigint NOT NULL CHECK (version > 0),
  updated_at  timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE events (
  global_position bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  -- Readers order by (transaction_id, global_position) and only read transactions older
  -- than every one still running, so an event committed late is never skipped.
  transaction_id  xid8 NOT NULL DEFAULT pg_current_xact_id(),
  stream_id       text NOT NULL REFERENCES streams (stream_id),
  stream_position bigint NOT NULL CHECK (stream_position > 0),
  event_id        uuid NOT NULL UNIQUE,
  type            text NOT NULL,
  data            jsonb NOT NULL,
  metadata        jsonb NOT NULL CHECK (metadata ? 'actor'),
  project_id      uuid,
  recorded_at     timestamptz NOT NULL DEFAULT now(),
  UNIQUE (stream_id, stream_position)
);

CREATE INDEX events_global_order ON events (transaction_id, global_position);
CREATE INDEX events_project_order ON events (project_id, transaction_id, global_position);

CREATE FUNCTION events_are_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION 'events are append-only: % refused', TG_OP USING ERRCODE = 'restrict_violation';
END $$;

CREATE TRIGGER events_no_update_delete BEFORE UPDATE OR DELETE ON events
  FOR EACH ROW EXECUTE FUNCTION events_are_append_only();
CREATE TRIGGER events_no_truncate BEFORE TRUNCATE ON events
  FOR EACH STATEMENT EXECUTE FUNCTION events_are_append_only();
