import type { Price } from '../../domain/budget/budget.js';
import type { Config } from '../../infra/config.js';
import { priceOf as callPriceOf } from '../llm/prices.js';

/**
 * Budgets read prices through the gateway's one lookup (services/llm/prices.ts), so a call
 * is reserved at the price it is then recorded at.
 */

/** The prices' one currency, or null when the operator set no prices. */
export const pricesCurrency = (config: Config): string | null => config.SVC_LLM_PRICES?.currency ?? null;

/** A model's price, or null: unpriced (counted in tokens only, and refused while a money budget is set). */
export const priceOf = (config: Config, model: string): Price | null => callPriceOf(config.SVC_LLM_PRICES ?? null, model);
