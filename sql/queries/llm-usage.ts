import type { Query } from '../query.js';

/** The model gateway's usage rows (migration 060): one per model call. */
export const llmUsageQueries = {
  insert: (u: { accountId: string; projectId: string; sessionId: string; sandboxId: string; model: string; inputTokens: number; outputTokens: number; status: number }): Query => ({
    text: `INSERT INTO llm_usage (account_id, project_id, session_id, sandbox_id, model, input_tokens, output_tokens, status, ledgered)
      VALUES ($1, $2, $3, $4, $5, $6, $7, $8, true)`,
    values: [u.accountId, u.projectId, u.sessionId, u.sandboxId, u.model, u.inputTokens, u.outputTokens, u.status],
  }),
  bySession: (sessionId: string): Query => ({
    name: 'llm_usage_by_session',
    text: `SELECT model, sum(input_tokens)::float8 AS input_tokens, sum(output_tokens)::float8 AS output_tokens, count(*)::int AS requests
      FROM llm_usage WHERE session_id = $1 GROUP BY model ORDER BY model`,
    values: [sessionId],
  }),
};
