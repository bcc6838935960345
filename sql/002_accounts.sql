-- Tenancy and access: plain tables, not event-sourced.
CREATE TABLE accounts (
  account_id uuid PRIMARY KEY,
  name       text NOT NULL CHECK (name <> ''),
  created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE users (
  user_id    uuid PRIMARY KEY,
  email      text NOT NULL UNIQUE CHECK (email <> ''),
  name       text NOT NULL DEFAULT '',
  created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE memberships (
  account_id uuid NOT NULL REFERENCES accounts (account_id) ON DELETE CASCADE,
  user_id    uuid NOT NULL REFERENCES users (user_id) ON DELETE CASCADE,
  role       text NOT NULL DEFAULT 'member' CHECK (role IN ('owner', 'member')),
  created_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (account_id, user_id)
);
CREATE INDEX memberships_user ON memberships (user_id);

CREATE TABLE projects (
  project_id     uuid PRIMARY KEY,
  account_id     uuid NOT NULL REFERENCES accounts (account_id) ON DELETE CASCADE,
  name           text NOT NULL CHECK (name <> ''),
  slug           text NOT NULL UNIQUE CHECK (slug ~ '^[a-z0-9][a-z0-9-]{0,62}$'),
  repo_url       text,
  -- https credentials for repo_url, encrypted at rest (infra/secrets.ts); never returned.
  repo_credentials_enc text,
  default_branch text NOT NULL DEFAULT 'main',
  created_at     timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX projects_account ON projects (account_id);

-- Per-project CR numbers: one row per project, incremented in the create transaction, so
-- numbers are gapless under concurrency and never recycled.
CREATE TABLE project_counters (
  project_id     uuid PRIMARY KEY REFERENCES projects (project_id) ON DELETE CASCADE,
  last_cr_number integer NOT NULL CHECK (last_cr_number > 0)
);

-- Personal access tokens. Only a sha256 of the whole token is stored. project_id set:
-- a project token (one project, no account routes); null: a user token.
CREATE TABLE tokens (
  token_id     uuid PRIMARY KEY,
  user_id      uuid NOT NULL REFERENCES users (user_id) ON DELETE CASCADE,
  project_id   uuid REFERENCES projects (project_id) ON DELETE CASCADE,
  name         text NOT NULL DEFAULT '',
  token_hash   bytea NOT NULL UNIQUE,
  created_at   timestamptz NOT NULL DEFAULT now(),
  expires_at   timestamptz,
  revoked_at   timestamptz,
  last_used_at timestamptz
);
CREATE INDEX tokens_user ON tokens (user_id);
