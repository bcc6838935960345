-- `svc login` bound to the terminal (issue 20 item 10). The CLI registers the login itself
-- (its loopback callback and a PKCE challenge) and prints a short user code; the approval
-- page asks for that code, so a link alone approves nothing; the one-time code the
-- approval sends to the callback redeems only with the PKCE verifier the CLI kept.
-- Rows of the earlier flow have no challenge and can no longer be approved or redeemed.
ALTER TABLE cli_logins
  ALTER COLUMN user_id DROP NOT NULL,
  ADD COLUMN user_code_hash bytea,
  ADD COLUMN code_challenge text,
  ADD COLUMN code_attempts int NOT NULL DEFAULT 0;
