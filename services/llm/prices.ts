import type { LlmPrices } from '../../infra/config.js';

/**
 * The price a model call is charged at (docs/models.md "Cost"): SVC_LLM_PRICES's entry for
 * the model the call named, per million tokens, in the one currency. Read when the call is
 * recorded and kept on its usage row, so a later price change rewrites nothing. Null: the
 * model has no price (counted in tokens and flagged unpriced).
 */
export interface CallPrice {
  input: number;
  output: number;
  currency: string;
}

export function priceOf(prices: LlmPrices | null, model: string): CallPrice | null {
  // Own keys only: a model named `__proto__` or `constructor` is not priced by Object's prototype.
  const entry = prices && Object.hasOwn(prices.models, model) ? prices.models[model] : undefined;
  return prices && entry ? { input: entry.input, output: entry.output, currency: prices.currency } : null;
}
