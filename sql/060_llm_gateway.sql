-- The model gateway (issue 21, docs/models.md). Each sandbox gets its own gateway key
-- (SVC_LLM_API_KEY), kept here as a sha256 beside its other credentials: revoking the
-- sandbox (revoked_at) revokes it with them.
ALTER TABLE sandbox_credentials ADD COLUMN llm_key_hash bytea UNIQUE;

-- One row per model call through the gateway, with the tokens the upstream reported.
-- No foreign key to the session: a removed session's spend still counts against its
-- account's budget.
CREATE TABLE llm_usage (
  usage_id      bigserial PRIMARY KEY,
  account_id    uuid NOT NULL,
  project_id    uuid NOT NULL,
  session_id    text NOT NULL,
  sandbox_id    uuid NOT NULL,
  model         text NOT NULL,
  input_tokens  bigint NOT NULL CHECK (input_tokens >= 0),
  output_tokens bigint NOT NULL CHECK (output_tokens >= 0),
  status        integer NOT NULL,
  created_at    timestamptz NOT NULL DEFAULT now()
);
CREATE INDEX llm_usage_session ON llm_usage (session_id);
CREATE INDEX llm_usage_account_time ON llm_usage (account_id, created_at);
