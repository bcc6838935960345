-- Agent-grade tokens (issue 20): every credential handed to a sandbox (its SVC_CLI_TOKEN =
-- SVC_EXECUTOR_TOKEN, and each clone credential minted with its SVC_TOKEN) is a token of
-- grade 'agent': it reads the project, pushes its session branch and opens/edits/closes
-- the CRs of its session, and nothing more (services/tokens/agent-policy.ts). 'person'
-- tokens (user tokens, and project tokens a user mints) keep the spec's rights.
--
-- An agent token names the sandbox it was minted for (`sandbox_id`, which 026 added for
-- clone credentials); the session comes from that sandbox's credentials row.
ALTER TABLE tokens ADD COLUMN grade text NOT NULL DEFAULT 'person';
ALTER TABLE tokens ADD CONSTRAINT tokens_grade CHECK (grade IN ('person', 'agent'));

-- Tokens already handed to sandboxes become agent-grade at once: the sessions' CLI tokens
-- (which did not name their sandbox until now) and the clone credentials.
UPDATE tokens t SET sandbox_id = c.sandbox_id FROM sandbox_credentials c
  WHERE c.cli_token_id = t.token_id AND t.sandbox_id IS NULL;
UPDATE tokens SET grade = 'agent' WHERE sandbox_id IS NOT NULL;

-- An agent token is always bound to one project and one sandbox.
ALTER TABLE tokens ADD CONSTRAINT tokens_agent_bound
  CHECK (grade <> 'agent' OR (project_id IS NOT NULL AND sandbox_id IS NOT NULL));
