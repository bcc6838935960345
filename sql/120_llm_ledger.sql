-- The model gateway's budgets as a ledger (docs/models.md "Budgets"): one row per scope
-- and period, with what was spent, what calls in flight have reserved, and (on a
-- session's row) how many calls are in flight. A call reserves before it goes upstream
-- with a conditional UPDATE (spent + reserved + n <= limit), so replicas of the API
-- cannot together pass a limit; it settles to what the upstream reported. Scopes are
-- text so another (a project's) is a new value, not a new table. Sessions' rows have one
-- period ('epoch'); accounts' one per SVC_LLM_ACCOUNT_BUDGET_HOURS window. No foreign
-- keys: a removed session's spend still counts against its account.
CREATE TABLE llm_ledger (
  ledger_id    bigserial PRIMARY KEY,
  scope        text NOT NULL CHECK (scope IN ('session', 'account')),
  scope_id     text NOT NULL,
  period_start timestamptz NOT NULL,
  spent        bigint NOT NULL DEFAULT 0 CHECK (spent >= 0),
  reserved     bigint NOT NULL DEFAULT 0 CHECK (reserved >= 0),
  in_flight    integer NOT NULL DEFAULT 0 CHECK (in_flight >= 0),
  UNIQUE (scope, scope_id, period_start)
);

-- One row per call in flight: what it reserved on which ledger rows, until it settles.
-- A process that dies leaves its rows behind; past expires_at (the upstream timeout)
-- the sweep charges them in full.
CREATE TABLE llm_reservations (
  reservation_id bigserial PRIMARY KEY,
  session_id     text NOT NULL,
  ledger_ids     bigint[] NOT NULL,
  amount         bigint NOT NULL CHECK (amount >= 0),
  created_at     timestamptz NOT NULL,
  expires_at     timestamptz NOT NULL
);
CREATE INDEX llm_reservations_expiry ON llm_reservations (expires_at);

-- Usage rows written since the ledger exists are already in it; a ledger row created for
-- a session or account with earlier calls starts from the rows that are not.
ALTER TABLE llm_usage ADD COLUMN ledgered boolean NOT NULL DEFAULT false;
