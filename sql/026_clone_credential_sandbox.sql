-- A clone credential (GET .../git/clone-credential) is a project token minted for one
-- sandbox: its row names that sandbox, so stopping, restarting or removing the session
-- revokes it with the sandbox's own keys instead of leaving it valid until it expires.
ALTER TABLE tokens ADD COLUMN sandbox_id uuid;
CREATE INDEX tokens_live_sandbox ON tokens (sandbox_id) WHERE sandbox_id IS NOT NULL AND revoked_at IS NULL;
