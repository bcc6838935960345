import type { Budget as BudgetJson } from '../../contracts/budgets.js';
import {
  budgetExceeded,
  describe,
  fromWire,
  inForce,
  MICRO,
  toWire,
  type Budget,
  type BudgetInForce,
  type BudgetPeriod,
  type BudgetScope,
  type BudgetUnit,
} from '../../domain/budget/budget.js';
import { notFound, validationError } from '../../domain/errors.js';
import type { ProjectRecord } from '../../domain/project.js';
import type { Config } from '../../infra/config.js';
import type { Db, Executor } from '../../infra/db/db.js';
import { appendOnly } from '../../infra/event-sourcing/handler.js';
import { llmBudgetQueries as q } from '../../sql/queries/llm-budgets.js';
import { llmLedgerQueries, type LedgerKey, type LedgerRow } from '../../sql/queries/llm-ledger.js';
import { accountsOfUser } from '../accounts/service.js';
import { pricesCurrency } from './prices.js';
import { appendLog, SYSTEM_ACTOR } from '../manifest/audit-log.js';
import { nowOf } from '../../lib/clock.js';

/**
 * Budgets a person sets (docs/models.md "Budgets a person sets"): a project's and its
 * account's, each a scope of the one reservation ledger (services/llm/ledger.ts reserves
 * on them with every model call). Set through the API only, by people, within the
 * operator's caps: svc.toml, and so any merge, cannot touch them. Written directly, with
 * `Budget…` events beside them: set or removed, 80% and 100% crossed (a project's channels
 * hear these), and refusals (once per budget, period, limit and subject).
 */
export interface BudgetDeps {
  db: Db;
  config: Config;
  now?: () => Date;
}


/** The operator's cap in the budget's unit (tokens or micro-units); 0: none. */
export const capOf = (config: Config, unit: BudgetUnit): number =>
  unit === 'tokens' ? config.SVC_LLM_BUDGET_MAX_TOKENS : Math.round(config.SVC_LLM_BUDGET_MAX_MONEY * MICRO);

/** The budgets over a project's calls (its own, its account's), as they hold now. */
export async function budgetsInForce(db: Executor, config: Config, projectId: string, accountId: string, now: Date): Promise<BudgetInForce[]> {
  const rows = await db.rows<Budget>(q.forProject(projectId, accountId));
  return rows.map((b) => inForce(b, capOf(config, b.unit), now));
}

export const ledgerKeyOf = (b: BudgetInForce): LedgerKey => ({ scope: b.scope, scopeId: b.scope_id, periodStart: b.periodStart, measure: b.measure });

/** The ledger rows of these budgets' current periods, created when missing (from the period's usage). */
export async function ledgerRowsOf(db: Executor, budgets: BudgetInForce[]): Promise<Map<BudgetInForce, LedgerRow>> {
  const keys = budgets.map(ledgerKeyOf);
  const read = () => db.rows<LedgerRow>(llmLedgerQueries.rows(keys));
  let rows = await read();
  if (rows.length < keys.length) {
    await db.run(llmLedgerQueries.ensure(keys));
    rows = await read();
  }
  const out = new Map<BudgetInForce, LedgerRow>();
  for (const b of budgets) {
    const row = rows.find((r) => r.scope === b.scope && r.scope_id === b.scope_id && r.measure === b.measure && new Date(r.period_start).getTime() === b.periodStart.getTime());
    if (!row) throw new Error(`budget ledger row missing after ensure (${b.scope} ${b.scope_id})`);
    out.set(b, row);
  }
  return out;
}

/** How a budget's scope is called in messages: the project's slug, the account's name. */
export async function scopeName(db: Executor, b: Pick<Budget, 'scope' | 'scope_id'>): Promise<string> {
  const n = await db.one<{ project: string | null; account: string | null }>(q.names(b.scope === 'project' ? b.scope_id : null, b.scope === 'account' ? b.scope_id : null));
  return (b.scope === 'project' ? n?.project : n?.account) ?? b.scope_id;
}

type LogEvent = { type: string; data: Record<string, unknown> };

/**
 * A budget's events: a project's on `budgets-<project>` (its channels hear them), an
 * account's on `budgets-account-<account>`; an account's crossings also on each of its
 * projects' streams, so every project's channels hear that the account's budget runs out.
 */
async function logBudget(tx: Executor, b: Pick<Budget, 'scope' | 'scope_id'>, events: LogEvent[], actor: string, toProjects = false): Promise<void> {
  if (b.scope === 'project') return appendLog(tx, 'budgets', b.scope_id, events, actor);
  await appendOnly(tx, { id: `budgets-account-${b.scope_id}`, type: 'budgets', projectId: null }, events, actor);
  if (toProjects) for (const p of await tx.rows<{ project_id: string }>(q.projectsOfAccount(b.scope_id))) await appendLog(tx, 'budgets', p.project_id, events, actor);
}

const wireOf = (b: BudgetInForce) => ({ scope: b.scope, scope_id: b.scope_id, unit: b.unit, period: b.period, limit: toWire(b.unit, b.limit), currency: b.currency });

/**
 * Records a refusal once per budget, period, limit and subject ('model calls', 'sessions',
 * 'trigger <slug>'): an agent retrying, or a trigger ticking, past its budget is one event.
 */
export async function recordRefusal(db: Db, b: BudgetInForce, subject: string, actor: string, now: Date): Promise<void> {
  await db.transaction(async (tx) => {
    const first = await tx.one(q.refusal({ scope: b.scope, scopeId: b.scope_id, periodStart: b.periodStart, limit: b.limit, subject, at: now }));
    if (first) await logBudget(tx, b, [{ type: 'BudgetRefused', data: { ...wireOf(b), subject, period_start: b.periodStart.toISOString() } }], actor);
  });
}

/**
 * New sessions (and so trigger fires, which spawn them) are refused while a budget over
 * the project is spent: 429 `project_budget_exceeded` / `account_budget_exceeded`.
 */
export async function assertWithinBudgets(deps: BudgetDeps, project: ProjectRecord, subject: string, actor: string): Promise<void> {
  const now = nowOf(deps);
  const budgets = await budgetsInForce(deps.db, deps.config, project.project_id, project.account_id, now);
  if (!budgets.length) return;
  const rows = await ledgerRowsOf(deps.db, budgets);
  for (const b of budgets) {
    if (rows.get(b)!.spent < b.limit) continue;
    await recordRefusal(deps.db, b, subject, actor, now);
    throw budgetExceeded(b, await scopeName(deps.db, b));
  }
}

/**
 * After a call settled: each budget row it was charged on that crossed 80% or 100% of its
 * limit records that once (the conditional UPDATE's one winner), with the event in the
 * same transaction.
 */
export async function noteCrossings(db: Db, charged: Array<{ ledgerId: string; budget: BudgetInForce }>): Promise<void> {
  for (const { ledgerId, budget: b } of charged) {
    for (const pct of [80, 100] as const) {
      await db.transaction(async (tx) => {
        const hit = await tx.one<{ spent: number }>(llmLedgerQueries.cross(ledgerId, b.limit, pct));
        if (!hit) return;
        const name = await scopeName(tx, b);
        await logBudget(tx, b, [{ type: 'BudgetThresholdCrossed', data: { ...wireOf(b), name, threshold: pct, spent: toWire(b.unit, hit.spent), period_start: b.periodStart.toISOString() } }], SYSTEM_ACTOR, true);
      });
    }
  }
}

/** `PUT …/budget`'s body, parsed: a budget, or `limit: null` to remove it. */
export type SetBudgetInput = { unit: BudgetUnit; period: BudgetPeriod; limit: number } | { limit: null };

export interface BudgetTarget {
  scope: BudgetScope;
  scopeId: string;
}

/** Sets (or removes) a budget, as a person: within the operator's cap; money in the prices' currency. */
export async function setBudget(deps: BudgetDeps, t: BudgetTarget, input: SetBudgetInput, actor: string): Promise<BudgetJson | null> {
  const now = nowOf(deps);
  if (input.limit === null) {
    await deps.db.transaction(async (tx) => {
      if (await tx.one(q.remove(t.scope, t.scopeId))) await logBudget(tx, { scope: t.scope, scope_id: t.scopeId }, [{ type: 'BudgetRemoved', data: { scope: t.scope, scope_id: t.scopeId } }], actor);
    });
    return null;
  }
  const { unit, period } = input;
  const currency = unit === 'money' ? pricesCurrency(deps.config) : null;
  if (unit === 'money' && !currency) throw validationError('A money budget needs prices: the operator sets SVC_LLM_PRICES (docs/models.md).', [{ path: 'unit', message: 'money needs SVC_LLM_PRICES' }]);
  const amount = fromWire(unit, input.limit);
  if (!Number.isSafeInteger(amount)) throw validationError('limit is too large.', [{ path: 'limit', message: 'too large' }]);
  if (amount < 1) throw validationError(`limit must be at least ${unit === 'money' ? `0.000001 ${currency}` : '1 token'}.`, [{ path: 'limit', message: 'too small' }]);
  const cap = capOf(deps.config, unit);
  if (cap > 0 && amount > cap) {
    const name = unit === 'tokens' ? 'SVC_LLM_BUDGET_MAX_TOKENS' : 'SVC_LLM_BUDGET_MAX_MONEY';
    throw validationError(`limit is above the operator's cap of ${describe({ unit, period, currency, limit: cap }).replace(/ per UTC \w+$/, '')} (${name}).`, [{ path: 'limit', message: `at most ${toWire(unit, cap)}` }]);
  }
  await deps.db.transaction(async (tx) => {
    await tx.one(q.upsert({ scope: t.scope, scopeId: t.scopeId, unit, period, amount, currency, setBy: actor, setAt: now }));
    await logBudget(tx, { scope: t.scope, scope_id: t.scopeId }, [{ type: 'BudgetSet', data: { scope: t.scope, scope_id: t.scopeId, unit, period, limit: input.limit, currency } }], actor);
  });
  return getBudget(deps, t, true);
}

/** A budget with what its current period has spent and holds; null when none is set. */
export async function getBudget(deps: BudgetDeps, t: BudgetTarget, justSet = false): Promise<BudgetJson | null> {
  const row = await deps.db.one<Budget>(q.get(t.scope, t.scopeId));
  if (!row) return null;
  const b = inForce(row, capOf(deps.config, row.unit), nowOf(deps));
  const ledger = (await ledgerRowsOf(deps.db, [b])).get(b)!;
  // Set below what the period already spent: its thresholds are crossed now, not at the next call.
  if (justSet) await noteCrossings(deps.db, [{ ledgerId: ledger.ledger_id, budget: b }]);
  return serializeBudget(b, ledger);
}


export function serializeBudget(b: BudgetInForce, ledger: Pick<LedgerRow, 'spent' | 'reserved'>): BudgetJson {
  return {
    scope: b.scope,
    scope_id: b.scope_id,
    unit: b.unit,
    period: b.period,
    limit: toWire(b.unit, b.amount),
    limit_in_force: toWire(b.unit, b.limit),
    currency: b.currency,
    period_start: b.periodStart.toISOString(),
    spent: toWire(b.unit, Number(ledger.spent)),
    reserved: toWire(b.unit, Number(ledger.reserved)),
    set_by: b.set_by,
    set_at: new Date(b.set_at).toISOString(),
  };
}

/** The account, when the caller is one of its members (else 404: no account's existence is told). */
export async function accountForCaller(db: Db, userId: string, accountId: string): Promise<string> {
  const mine = await accountsOfUser(db, userId);
  const a = mine.find((x) => x.account_id === accountId.toLowerCase());
  if (!a) throw notFound('Account');
  return a.account_id;
}
