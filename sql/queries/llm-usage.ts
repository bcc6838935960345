import type { Query } from '../query.js';

/** The model gateway's usage rows (migration 060): one per model call. */
export const llmUsageQueries = {
  /** `price`: what the model cost when the call was made (SVC_LLM_PRICES), kept on the row; null: unpriced. */
  insert: (u: {
    accountId: string;
    projectId: string;
    sessionId: string;
    sandboxId: string;
    model: string;
    inputTokens: number;
    outputTokens: number;
    status: number;
    price: { input: number; output: number; currency: string } | null;
  }): Query => ({
    text: `INSERT INTO llm_usage (account_id, project_id, session_id, sandbox_id, model, input_tokens, output_tokens, status, ledgered, input_price_per_mtok, output_price_per_mtok, currency)
      VALUES ($1, $2, $3, $4, $5, $6, $7, $8, true, $9, $10, $11)`,
    values: [u.accountId, u.projectId, u.sessionId, u.sandboxId, u.model, u.inputTokens, u.outputTokens, u.status, u.price?.input ?? null, u.price?.output ?? null, u.price?.currency ?? null],
  }),
};
