-- `svc login`: an approval hands the CLI a one-time code (its hash kept here), which the
-- CLI itself redeems for a token (POST /v1/cli/login/token). A login whose callback never
-- reaches the CLI so mints nothing; expired rows are swept when new logins register.
ALTER TABLE cli_logins ADD COLUMN code_hash bytea, ADD COLUMN redeemed_at timestamptz;
