-- Dashboard (browser) sign-in: passwords, server-side sessions, failed sign-ins, CLI logins.

-- scrypt hash with its parameters: 'scrypt$<N>$<r>$<p>$<salt b64url>$<hash b64url>'.
ALTER TABLE users ADD COLUMN password_hash text;

-- One row per signed-in browser. The cookie carries the id and a secret; only the
-- secret's sha256 is stored. Revoked or expired: the cookie is worth nothing.
CREATE TABLE dashboard_sessions (
  session_id   uuid PRIMARY KEY,
  user_id      uuid NOT NULL REFERENCES users (user_id) ON DELETE CASCADE,
  secret_hash  bytea NOT NULL,
  csrf_token   text NOT NULL,
  -- The browser calls the API as its user through a user token minted at sign-in (sealed
  -- with the server key, revoked at sign-out): the dashboard is one more API client.
  token_id     uuid NOT NULL REFERENCES tokens (token_id) ON DELETE CASCADE,
  token_enc    text NOT NULL,
  created_at   timestamptz NOT NULL DEFAULT now(),
  expires_at   timestamptz NOT NULL,
  revoked_at   timestamptz,
  last_seen_at timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX dashboard_sessions_user ON dashboard_sessions (user_id);

-- Failed sign-ins, counted per email and per client address over a window.
CREATE TABLE sign_in_failures (
  id         bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
  email      text NOT NULL,
  client     text NOT NULL,
  failed_at  timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX sign_in_failures_email ON sign_in_failures (email, failed_at);
CREATE INDEX sign_in_failures_client ON sign_in_failures (client, failed_at);

-- `svc login` browser flow: the CLI's state is registered when the page first shows it,
-- and consumed once (approve or deny) before it expires.
CREATE TABLE cli_logins (
  state       text PRIMARY KEY,
  callback    text NOT NULL,
  hostname    text NOT NULL DEFAULT '',
  user_id     uuid NOT NULL REFERENCES users (user_id) ON DELETE CASCADE,
  created_at  timestamptz NOT NULL DEFAULT now(),
  expires_at  timestamptz NOT NULL,
  used_at     timestamptz,
  outcome     text
);
