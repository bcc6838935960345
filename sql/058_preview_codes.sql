-- Previews on their own origin (issue 20 item 6): the dashboard hands the browser a
-- one-time code (its sha256 kept here) that the preview origin redeems, once and within
-- a minute, for a cookie of its own bound to (user, session, port). Redeeming deletes the
-- row; expired rows are swept when new codes are minted.
CREATE TABLE preview_codes (
  code_hash    bytea PRIMARY KEY,
  user_id      uuid NOT NULL,
  project_id   uuid NOT NULL,
  session_id   text NOT NULL,
  port         integer NOT NULL CHECK (port BETWEEN 1 AND 65535),
  frame_origin text NOT NULL,
  path         text NOT NULL,
  expires_at   timestamptz NOT NULL
);
CREATE INDEX preview_codes_expiry ON preview_codes (expires_at);
