-- Session JSON's agent_state (issue 21): starting | ready | error | stopped, projected
-- from the session stream (SessionAgentReady, SessionAgentFailed and the lifecycle).
-- Rows from before the column take the state their status implies.
ALTER TABLE project_sessions ADD COLUMN agent_state text NOT NULL DEFAULT 'starting'
  CHECK (agent_state IN ('starting', 'ready', 'error', 'stopped'));
UPDATE project_sessions SET agent_state = CASE status
  WHEN 'running' THEN 'ready' WHEN 'failed' THEN 'error' WHEN 'provisioning' THEN 'starting' ELSE 'stopped' END;
