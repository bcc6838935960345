-- The merge queue of each (project, base branch): a projection of its stream (`mq-...`),
-- one row per queue: the speculative merge results built, the landing recorded before the
-- base moves, the conflicts held for their agents. Rebuilt from the log like the others.
CREATE TABLE merge_queues (
  project_id     uuid NOT NULL REFERENCES projects (project_id) ON DELETE CASCADE,
  base_ref       text NOT NULL,
  base_sha       text,
  built          jsonb NOT NULL DEFAULT '[]',
  landing        jsonb,
  held           jsonb NOT NULL DEFAULT '[]',
  rebuilds       integer NOT NULL DEFAULT 0,
  landed         integer NOT NULL DEFAULT 0,
  updated_at     timestamptz NOT NULL,
  stream_version bigint NOT NULL,
  PRIMARY KEY (project_id, base_ref)
);

-- Who waits in a queue is read off the CRs' own streams: their latest ChangeRequestQueued
-- with nothing after it that ends the entry. This index finds the entries of a project.
CREATE INDEX events_cr_queued ON events (project_id, global_position) WHERE type = 'ChangeRequestQueued';
