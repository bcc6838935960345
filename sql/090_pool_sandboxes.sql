-- Prepared sandboxes (issue 22 item 2, docs/sessions.md "Pool"): booted for a project with
-- their runtime running and no session. A create takes one ('ready' → deleted) in the
-- transaction that admits the session ('claimed', naming it), and the session's
-- provisioning takes it out of the table when it hands it over; it never comes back. `key_sealed` is the pool
-- sandbox's own control key (sealed with the server key), the only thing that opens its
-- claim; `fingerprint` says what it was booted with (provider, image, runtime, agent
-- config), and only a session that would get the same is handed it. `labels` are the ones
-- the provider put on it (svc.managed-by, svc.project, svc.sandbox, svc.pool), so an
-- orphan sweep over the provider's list knows it.
CREATE TABLE pool_sandboxes (
  sandbox_id   uuid PRIMARY KEY,
  project_id   uuid NOT NULL REFERENCES projects (project_id) ON DELETE CASCADE,
  provider     text NOT NULL,
  fingerprint  text NOT NULL,
  state        text NOT NULL CHECK (state IN ('booting', 'ready', 'claimed')),
  session_id   text,
  url          text,
  ref          text,
  key_sealed   text NOT NULL,
  labels       jsonb NOT NULL DEFAULT '{}',
  created_at   timestamptz NOT NULL DEFAULT now(),
  ready_at     timestamptz,
  claimed_at   timestamptz,
  CHECK ((state = 'claimed') = (session_id IS NOT NULL))
);
CREATE UNIQUE INDEX pool_sandboxes_session ON pool_sandboxes (session_id) WHERE session_id IS NOT NULL;
CREATE INDEX pool_sandboxes_ready ON pool_sandboxes (project_id, fingerprint, ready_at) WHERE state = 'ready';
