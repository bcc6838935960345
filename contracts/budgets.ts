import { z } from 'zod';

/**
 * Budgets a person sets on a project or an account (docs/models.md "Budgets a person
 * sets"; docs/api.md). Amounts are tokens, or money in the prices' currency (up to six
 * decimals: the ledger counts micro-units).
 */
export const BudgetUnitSchema = z.enum(['tokens', 'money']);
export const BudgetPeriodSchema = z.enum(['day', 'month']);

export const SetBudgetBody = z.union([
  z
    .strictObject({ unit: BudgetUnitSchema, period: BudgetPeriodSchema, limit: z.number().positive().finite().max(1e15) })
    .refine((b) => b.unit !== 'tokens' || Number.isInteger(b.limit), { message: 'a token budget is a whole number of tokens', path: ['limit'] }),
  /** Removes the budget. */
  z.strictObject({ limit: z.null() }),
]);
export type SetBudgetBody = z.infer<typeof SetBudgetBody>;

export const BudgetSchema = z.strictObject({
  scope: z.enum(['project', 'account']),
  scope_id: z.string(),
  unit: BudgetUnitSchema,
  period: BudgetPeriodSchema,
  /** What the person set. */
  limit: z.number(),
  /** What holds: `limit`, or the operator's cap when that is lower. */
  limit_in_force: z.number(),
  /** The prices' currency, for a money budget; null for tokens. */
  currency: z.string().nullable(),
  /** The UTC day or month now counted. */
  period_start: z.string(),
  spent: z.number(),
  /** Held by calls in flight. */
  reserved: z.number(),
  set_by: z.string(),
  set_at: z.string(),
});
export type Budget = z.infer<typeof BudgetSchema>;

/** `GET`/`PUT …/budget`: the budget, or null when none is set. */
export const OneBudget = z.strictObject({ budget: BudgetSchema.nullable() });
