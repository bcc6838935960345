import { DomainError, type ErrorReason } from '../errors.js';

/**
 * Budgets a person sets (docs/models.md "Budgets a person sets"): per project or account,
 * in tokens or in money, per UTC day or month. Pure: periods, units and the refusal.
 * Money is counted in integer micro-units of the prices' one currency, so the ledger's
 * conditional UPDATEs stay integer arithmetic.
 */
export type BudgetScope = 'project' | 'account';
export type BudgetUnit = 'tokens' | 'money';
export type BudgetPeriod = 'day' | 'month';
export type Measure = `${BudgetUnit}/${BudgetPeriod}`;

export const MICRO = 1_000_000;

/** A budget as stored: `amount` in tokens, or in micro-units of `currency`. */
export interface Budget {
  scope: BudgetScope;
  scope_id: string;
  unit: BudgetUnit;
  period: BudgetPeriod;
  amount: number;
  currency: string | null;
  set_by: string;
  set_at: Date;
}

/** A budget in force for a call: its limit is the smaller of the person's and the operator's cap. */
export interface BudgetInForce extends Budget {
  limit: number;
  periodStart: Date;
  measure: Measure;
}

/** A model's price per million tokens, which is its price per token in micro-units. */
export interface Price {
  input: number;
  output: number;
  currency: string;
}

export const measureOf = (b: Pick<Budget, 'unit' | 'period'>): Measure => `${b.unit}/${b.period}`;

/** The UTC day or month `now` falls in. */
export function periodStart(period: BudgetPeriod, now: Date): Date {
  return period === 'day'
    ? new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate()))
    : new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), 1));
}

/** The limit in force: a cap the operator lowered below a budget holds it (0: no cap). */
export function inForce(b: Budget, cap: number, now: Date): BudgetInForce {
  return { ...b, limit: cap > 0 ? Math.min(b.amount, cap) : b.amount, periodStart: periodStart(b.period, now), measure: measureOf(b) };
}

/** What a call costs on a budget's row: tokens, or micro-units (rounded up) at its price. */
export function costOn(unit: BudgetUnit, price: Price | null, input: number, output: number): number {
  if (unit === 'tokens') return input + output;
  if (!price) return 0;
  return Math.ceil(input * price.input + output * price.output);
}

/** Wire amounts: tokens as they are, money in the currency (micro-units / 1e6). */
export const toWire = (unit: BudgetUnit, amount: number): number => (unit === 'money' ? amount / MICRO : amount);
export const fromWire = (unit: BudgetUnit, amount: number): number => (unit === 'money' ? Math.round(amount * MICRO) : amount);

/** "1000 tokens per day" / "25 USD per month", for messages and notices. */
export function describe(b: Pick<Budget, 'unit' | 'period' | 'currency'> & { limit: number }): string {
  const what = b.unit === 'money' ? `${toWire('money', b.limit)} ${b.currency ?? ''}`.trim() : `${b.limit} tokens`;
  return `${what} per UTC ${b.period}`;
}

export const budgetCode = (scope: BudgetScope) => `${scope}_budget_exceeded` as const;

const REASON: Record<BudgetScope, ErrorReason> = { project: 'Project budget exceeded', account: 'Account budget exceeded' };

/**
 * The refusal at 100% (or with no room left for the call): 429 without Retry-After
 * (waiting does not help before the period ends; a person raising the budget does),
 * naming the budget. `held`: the room is taken by calls in flight, not yet spent.
 */
export function budgetExceeded(b: BudgetInForce, name: string, state: 'spent' | 'short' | 'held' = 'spent'): DomainError {
  const whose = b.scope === 'project' ? `The project '${name}'` : `The account '${name}'`;
  const how = { spent: 'spent its model budget', short: 'too little of its model budget left for this call', held: 'its model budget held by calls in flight' }[state];
  return new DomainError(
    'rate_limited',
    REASON[b.scope],
    `${whose} has ${how} (${describe(b)}, set by a person). ` +
      `A person raises it (svc budget set, or PUT /v1/${b.scope === 'project' ? 'projects' : 'accounts'}/${b.scope_id}/budget), or the next ${b.period} starts it again.`,
    { code: budgetCode(b.scope), budget: { scope: b.scope, scope_id: b.scope_id, unit: b.unit, period: b.period, limit: toWire(b.unit, b.limit), currency: b.currency } },
  );
}

export const isBudgetRefusal = (err: unknown): err is DomainError =>
  err instanceof DomainError && (err.details.code === 'project_budget_exceeded' || err.details.code === 'account_budget_exceeded') && typeof err.details.budget === 'object';

/** A model without a price cannot be charged against a money budget: refused while one is set. */
export function unpricedModel(model: string, b: BudgetInForce): DomainError {
  return new DomainError(
    'forbidden',
    'Unpriced model',
    `The model '${model}' has no price (SVC_LLM_PRICES) in ${b.currency ?? 'the budget’s currency'}, and the ${b.scope} has a money budget (${describe(b)}): calls to it are refused while the budget is set.`,
    { code: 'model_unpriced' },
  );
}
