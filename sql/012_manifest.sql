-- Issue 12: the manifest in force per project, project secrets, triggers and apps.
-- Plain state tables; every change is also an event in the log (infra/manifest/log.ts).

-- The last valid manifest stays in force: `manifest`/`valid_sha` only move on a valid
-- parse; `source_sha`, `errors`, `warnings` describe the latest sync attempt.
CREATE TABLE project_manifests (
  project_id  uuid PRIMARY KEY REFERENCES projects (project_id) ON DELETE CASCADE,
  manifest    jsonb,
  valid_sha   text,
  source_sha  text,
  errors      jsonb NOT NULL DEFAULT '[]',
  warnings    jsonb NOT NULL DEFAULT '[]',
  synced_at   timestamptz NOT NULL DEFAULT now()
);

-- Values sealed with AES-256-GCM (infra/secrets.ts), the project and name bound as AAD.
CREATE TABLE project_secrets (
  project_id uuid NOT NULL REFERENCES projects (project_id) ON DELETE CASCADE,
  name       text NOT NULL CHECK (name ~ '^[A-Z_][A-Z0-9_]*$' AND name NOT LIKE 'SVC\_%'),
  value_enc  text NOT NULL,
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (project_id, name)
);

-- One row per project: bumped by every secrets change (and serialises them).
CREATE TABLE project_secret_revisions (
  project_id uuid PRIMARY KEY REFERENCES projects (project_id) ON DELETE CASCADE,
  revision   bigint NOT NULL DEFAULT 0
);

CREATE TABLE triggers (
  project_id    uuid NOT NULL REFERENCES projects (project_id) ON DELETE CASCADE,
  slug          text NOT NULL,
  schedule      text NOT NULL,
  prompt        text NOT NULL,
  agent         text,
  model         text,
  enabled       boolean NOT NULL,
  last_fired_at timestamptz,
  next_fire_at  timestamptz,
  PRIMARY KEY (project_id, slug)
);
CREATE INDEX triggers_due ON triggers (next_fire_at) WHERE enabled;

-- Exactly once per tick across workers: the (trigger, tick) row is the claim.
CREATE TABLE trigger_fires (
  project_id uuid NOT NULL,
  slug       text NOT NULL,
  tick       timestamptz NOT NULL,
  kind       text NOT NULL CHECK (kind IN ('schedule', 'manual')),
  outcome    text NOT NULL DEFAULT 'pending',
  session_id text,
  fired_at   timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (project_id, slug, tick, kind),
  FOREIGN KEY (project_id, slug) REFERENCES triggers (project_id, slug) ON DELETE CASCADE
);

CREATE TABLE apps (
  project_id    uuid NOT NULL REFERENCES projects (project_id) ON DELETE CASCADE,
  name          text NOT NULL,
  spec          jsonb NOT NULL,
  manifest_hash text NOT NULL,
  -- 'pending' | 'deploying' | 'live' | 'failed' | 'stopped'
  status        text NOT NULL DEFAULT 'pending',
  commit_sha    text,
  url           text,
  pid           integer,
  deployed_at   timestamptz,
  last_error    text,
  removed       boolean NOT NULL DEFAULT false,
  PRIMARY KEY (project_id, name)
);

CREATE TABLE app_deploys (
  deploy_id     uuid PRIMARY KEY,
  project_id    uuid NOT NULL,
  name          text NOT NULL,
  commit_sha    text NOT NULL,
  manifest_hash text NOT NULL,
  status        text NOT NULL,
  url           text,
  error         text,
  started_at    timestamptz NOT NULL DEFAULT now(),
  finished_at   timestamptz
);
CREATE INDEX app_deploys_app ON app_deploys (project_id, name, started_at DESC);
