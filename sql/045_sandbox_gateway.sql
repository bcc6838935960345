-- The sandbox gateway (issue 20 item 2) asks, for every request made with a project
-- token, whether it is a sandbox's CLI token: an index probe, not a scan.
CREATE INDEX sandbox_credentials_cli_token ON sandbox_credentials (cli_token_id) WHERE cli_token_id IS NOT NULL;
