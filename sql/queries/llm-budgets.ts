import type { Query } from '../query.js';

const cols = 'scope, scope_id, unit, period, amount::float8 AS amount, currency, set_by, set_at';

/** Budgets a person sets (migration 205; services/budgets). */
export const llmBudgetQueries = {
  get: (scope: string, scopeId: string): Query => ({
    text: `SELECT ${cols} FROM llm_budgets WHERE scope = $1 AND scope_id = $2`,
    values: [scope, scopeId],
  }),
  /** The budgets over a project's calls: its own and its account's. */
  forProject: (projectId: string, accountId: string): Query => ({
    name: 'llm_budgets_for_project',
    text: `SELECT ${cols} FROM llm_budgets WHERE (scope = 'project' AND scope_id = $1) OR (scope = 'account' AND scope_id = $2) ORDER BY scope DESC`,
    values: [projectId, accountId],
  }),
  upsert: (b: { scope: string; scopeId: string; unit: string; period: string; amount: number; currency: string | null; setBy: string; setAt: Date }): Query => ({
    text: `INSERT INTO llm_budgets (scope, scope_id, unit, period, amount, currency, set_by, set_at)
      VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
      ON CONFLICT (scope, scope_id) DO UPDATE SET unit = EXCLUDED.unit, period = EXCLUDED.period, amount = EXCLUDED.amount,
        currency = EXCLUDED.currency, set_by = EXCLUDED.set_by, set_at = EXCLUDED.set_at
      RETURNING ${cols}`,
    values: [b.scope, b.scopeId, b.unit, b.period, b.amount, b.currency, b.setBy, b.setAt],
  }),
  remove: (scope: string, scopeId: string): Query => ({
    text: 'DELETE FROM llm_budgets WHERE scope = $1 AND scope_id = $2 RETURNING scope',
    values: [scope, scopeId],
  }),
  /** A refusal, once per budget, period, limit and subject: the one caller that gets a row back records it. */
  refusal: (r: { scope: string; scopeId: string; periodStart: Date; limit: number; subject: string; at: Date }): Query => ({
    text: `INSERT INTO llm_budget_refusals (scope, scope_id, period_start, limit_amount, subject, refused_at)
      VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT DO NOTHING RETURNING subject`,
    values: [r.scope, r.scopeId, r.periodStart, r.limit, r.subject, r.at],
  }),
  /** Where an account's budget events go so each project's channels hear them. */
  projectsOfAccount: (accountId: string): Query => ({
    text: 'SELECT project_id::text FROM projects WHERE account_id = $1 ORDER BY created_at',
    values: [accountId],
  }),
  names: (projectId: string | null, accountId: string | null): Query => ({
    text: `SELECT (SELECT slug FROM projects WHERE project_id = $1::uuid) AS project, (SELECT name FROM accounts WHERE account_id = $2::uuid) AS account`,
    values: [projectId, accountId],
  }),
};
