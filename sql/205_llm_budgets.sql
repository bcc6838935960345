-- Budgets a person sets (docs/models.md "Budgets a person sets"): one per project and one
-- per account, in tokens or in money (integer micro-units of the prices' currency), per
-- UTC day or month. Written directly by the budget routes, with an audit log of
-- `Budget…` events beside it (streams `budgets-<project>`, `budgets-account-<account>`).
-- Never read from svc.toml: nothing a merge brings can change one.
CREATE TABLE llm_budgets (
  scope      text NOT NULL CHECK (scope IN ('project', 'account')),
  scope_id   text NOT NULL,
  unit       text NOT NULL CHECK (unit IN ('tokens', 'money')),
  period     text NOT NULL CHECK (period IN ('day', 'month')),
  amount     bigint NOT NULL CHECK (amount > 0),
  currency   text,
  set_by     text NOT NULL,
  set_at     timestamptz NOT NULL,
  PRIMARY KEY (scope, scope_id),
  CHECK ((unit = 'money') = (currency IS NOT NULL))
);

-- They are scopes of the one reservation ledger (migration 120): a project's row is a new
-- scope, and a row's `measure` says what it counts, so a budget that changes unit or period
-- starts a row of its own: 'tokens' (a session's, the operator's account budget), or
-- '<tokens|money>/<day|month>' (a budget a person set). Money rows count micro-units.
ALTER TABLE llm_ledger DROP CONSTRAINT llm_ledger_scope_check;
ALTER TABLE llm_ledger ADD CONSTRAINT llm_ledger_scope_check CHECK (scope IN ('session', 'account', 'project'));
ALTER TABLE llm_ledger ADD COLUMN measure text NOT NULL DEFAULT 'tokens'
  CHECK (measure IN ('tokens', 'tokens/day', 'tokens/month', 'money/day', 'money/month'));
ALTER TABLE llm_ledger DROP CONSTRAINT llm_ledger_scope_scope_id_period_start_key;
ALTER TABLE llm_ledger ADD CONSTRAINT llm_ledger_key UNIQUE (scope, scope_id, period_start, measure);
-- The limit whose 80% (warned) and 100% (spent) were recorded: each crossing is one event
-- per limit and period, and a raised budget crosses again.
ALTER TABLE llm_ledger ADD COLUMN warned_limit bigint, ADD COLUMN spent_limit bigint;

-- A call reserves tokens on token rows and micro-units on money rows.
ALTER TABLE llm_reservations ADD COLUMN money_amount bigint NOT NULL DEFAULT 0 CHECK (money_amount >= 0);

-- Refusals recorded once per budget, period, limit and subject ('model calls', 'sessions',
-- 'trigger <slug>'): a trigger ticking every minute past its budget is one event.
CREATE TABLE llm_budget_refusals (
  scope        text NOT NULL,
  scope_id     text NOT NULL,
  period_start timestamptz NOT NULL,
  limit_amount bigint NOT NULL,
  subject      text NOT NULL,
  refused_at   timestamptz NOT NULL,
  PRIMARY KEY (scope, scope_id, period_start, limit_amount, subject)
);
