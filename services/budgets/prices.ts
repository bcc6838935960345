import type { Price } from '../../domain/budget/budget.js';
import type { Config } from '../../infra/config.js';

/**
 * The one place budgets read prices from: SVC_LLM_PRICES as infra/config parses it
 * (`{currency, models: {<model>: {input, output}}}`, per million tokens; null: none).
 * The cost work owns that variable, its parsing and the price each usage row keeps
 * (services/llm/prices.ts there); this reads the parsed value only, by the same rule
 * (own keys only), so a call is reserved at the price it is then recorded at.
 */
interface PriceTable {
  currency: string;
  models: Record<string, { input: number; output: number }>;
}

const tableOf = (config: Config): PriceTable | null => (config as unknown as { SVC_LLM_PRICES?: PriceTable | null }).SVC_LLM_PRICES ?? null;

/** The prices' one currency, or null when the operator set no prices. */
export const pricesCurrency = (config: Config): string | null => tableOf(config)?.currency ?? null;

/** A model's price, or null: unpriced (counted in tokens only, and refused while a money budget is set). */
export function priceOf(config: Config, model: string): Price | null {
  const t = tableOf(config);
  const p = t && Object.hasOwn(t.models, model) ? t.models[model] : undefined;
  return t && p ? { input: p.input, output: p.output, currency: t.currency } : null;
}
