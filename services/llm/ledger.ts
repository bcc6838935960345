import { DomainError, validationError } from '../../domain/errors.js';
import type { Config } from '../../infra/config.js';
import type { Db } from '../../infra/db/db.js';
import { llmLedgerQueries, type LedgerKey, type LedgerRow } from '../../sql/queries/llm-ledger.js';
import { budgetExceeded, costOn, unpricedModel, type BudgetInForce, type Price } from '../../domain/budget/budget.js';
import { budgetsInForce, ledgerKeyOf, noteCrossings, recordRefusal, scopeName } from '../budgets/service.js';
import { SYSTEM_ACTOR } from '../manifest/audit-log.js';
import { priceOf } from '../budgets/prices.js';
import type { TokenUsage } from './usage-tap.js';
import { systemClock } from '../../lib/clock.js';

/**
 * The model gateway's budgets (docs/models.md "Budgets"): a call reserves what it may
 * cost before it goes upstream, and settles to what it cost once it ends. The reservation
 * is the prompt's estimate plus the output the budget leaves, and the upstream is asked
 * for no more output than that (`max_tokens`), so no number of parallel calls, from any
 * number of API replicas, can make the upstream generate past a limit. The ledger's rows
 * (sql/queries/llm-ledger.ts) are written by conditional UPDATEs only, one per scope (the
 * session, the operator's account budget, the budgets a person set on the project and the
 * account), in one transaction, in ledger_id order. A session's row also counts its calls
 * in flight.
 */
export interface LedgerDeps {
  config: Config;
  db: Db;
}

export interface LedgerCaller {
  session_id: string;
  account_id: string;
  /** The project whose budget (and its account's) a person set; absent: only the operator's budgets. */
  project_id?: string;
}

export interface Reservation {
  id: string;
  /** What the ledger holds for the call until it settles. */
  amount: number;
  promptEstimate: number;
  /** Output tokens per choice the upstream is asked for at most; null: no budget applies, the body is sent as it came. */
  outputAllowance: number | null;
  choices: number;
  /** The model's price when it has one: what money rows are charged at settle. */
  price: Price | null;
  /** The budgets a person set that the call reserved on, for their thresholds once it settles. */
  budgets: Array<{ ledgerId: string; budget: BudgetInForce }>;
}

/** Output a call may ask for when it names no max_tokens and a budget applies (the usual runtimes' own cap). */
export const DEFAULT_OUTPUT_TOKENS = 32_000;
/** How long a call over its session's concurrency (or behind calls holding the budget) waits before its 429. */
export const QUEUE_WAIT_MS = 3_000;
const RETRY_MS = 100;
/**
 * A reservation expires this long after the upstream timeout: the gateway cuts a live call
 * at the timeout and settles it first, so only a dead process's calls are charged in full.
 */
export const EXPIRY_GRACE_MS = 5_000;

/** OpenAI's shapes: budgets spent are `insufficient_quota`, too many calls at once a rate limit. */
const budgetSpent = (scope: 'session' | 'account', config: Config, held: boolean) =>
  new DomainError(
    'rate_limited',
    'Budget spent',
    scope === 'session'
      ? `This session's token budget (${config.SVC_LLM_SESSION_TOKEN_BUDGET} tokens, SVC_LLM_SESSION_TOKEN_BUDGET) ${held ? 'is held by its calls in flight' : 'is spent'}.`
      : `This account's token budget (${config.SVC_LLM_ACCOUNT_TOKEN_BUDGET} tokens per ${config.SVC_LLM_ACCOUNT_BUDGET_HOURS} h, SVC_LLM_ACCOUNT_TOKEN_BUDGET) ${held ? 'is held by calls in flight' : 'is spent'}.`,
    { code: `${scope}_budget_exceeded` },
  );
const tooManyCalls = (config: Config) =>
  new DomainError(
    'rate_limited',
    'Too many calls',
    `This session has ${config.SVC_LLM_SESSION_CONCURRENCY} model calls in flight (SVC_LLM_SESSION_CONCURRENCY); retry when one has ended.`,
    { code: 'rate_limit_exceeded', type: 'rate_limit_error' },
  );

/**
 * The prompt's tokens, estimated from the request's JSON at four bytes a token: above what
 * tokenizers count for prose and close for code, since the JSON's own syntax counts too.
 */
export function promptEstimate(body: Record<string, unknown>): number {
  return Math.max(1, Math.ceil(Buffer.byteLength(JSON.stringify(body)) / 4));
}

/** Tokens of text the upstream streamed, estimated the same way. */
export function outputEstimate(chars: number): number {
  return Math.ceil(chars / 4);
}

/**
 * The fields a reservation is computed from must mean to the upstream what they mean here:
 * an `n` of "8" counted as one choice but coerced to eight upstream, or a `stream` of
 * "true", would let a call generate past what it reserved. Wrong types are refused (400),
 * and multipliers the ledger does not count (`best_of`, beam search) are not taken.
 */
export function assertBudgetable(body: Record<string, unknown>): void {
  const bad = (path: string, message: string) => {
    throw validationError(`${path} ${message}`, [{ path, message }]);
  };
  const positiveInt = (v: unknown) => typeof v === 'number' && Number.isInteger(v) && v >= 1;
  if (body.n !== undefined && body.n !== null && !(positiveInt(body.n) && (body.n as number) <= 128)) bad('n', 'must be an integer from 1 to 128.');
  if (body.stream !== undefined && body.stream !== null && typeof body.stream !== 'boolean') bad('stream', 'must be a boolean.');
  for (const k of ['max_tokens', 'max_completion_tokens'] as const) if (body[k] !== undefined && body[k] !== null && !positiveInt(body[k])) bad(k, 'must be a positive integer.');
  if (body.best_of !== undefined && body.best_of !== null && body.best_of !== 1) bad('best_of', 'is not taken through the gateway (each candidate would be generated past the budget).');
  if (body.use_beam_search !== undefined && body.use_beam_search !== false) bad('use_beam_search', 'is not taken through the gateway.');
}

function choicesOf(body: Record<string, unknown>): number {
  const n = body.n;
  return typeof n === 'number' && Number.isInteger(n) && n > 1 ? n : 1;
}

/** The output the caller asked for: the smaller of max_tokens and max_completion_tokens, when given. */
function requestedOutput(body: Record<string, unknown>): number {
  const asked = [body.max_tokens, body.max_completion_tokens].filter((v): v is number => typeof v === 'number' && Number.isFinite(v) && v >= 1).map(Math.floor);
  return Math.min(DEFAULT_OUTPUT_TOKENS, ...asked);
}

/** The account's period: fixed windows of SVC_LLM_ACCOUNT_BUDGET_HOURS from the Unix epoch, the same on every replica. */
export function accountPeriodStart(config: Config, now: Date): Date {
  const ms = config.SVC_LLM_ACCOUNT_BUDGET_HOURS * 3_600_000;
  return new Date(Math.floor(now.getTime() / ms) * ms);
}

const SESSION_PERIOD = new Date(0);

/**
 * One scope a call reserves on. A call's tokens cost `input` per prompt token and
 * `output` per output token on it: 1 and 1 on token rows, the model's price per million
 * tokens (= micro-units per token) on money rows.
 */
interface Scope {
  name: 'session' | 'account' | 'budget';
  key: LedgerKey;
  limit: number;
  rate: { input: number; output: number };
  money: boolean;
  /** A person's budget (services/budgets). */
  budget?: BudgetInForce;
}

type Decision = { kind: 'reserve'; amount: number; money: number; allowance: number | null } | { kind: 'refuse'; scope: Scope } | { kind: 'wait'; why: 'concurrency' | Scope };

const TOKENS = { input: 1, output: 1 };

/** What a call may reserve given the rows as read: a decision the conditional UPDATEs then hold to. */
function decide(config: Config, scopes: Scope[], rows: Map<Scope, LedgerRow>, price: Price | null, prompt: number, want: number, choices: number): Decision {
  const limited = scopes.filter((s) => s.limit > 0);
  const cost = (s: Scope, out: number) => Math.ceil(prompt * s.rate.input + out * s.rate.output);
  // Not even one token a choice with nothing in flight (or nothing left at all): spent, refused at once.
  for (const s of limited) {
    const spent = rows.get(s)!.spent;
    if (spent >= s.limit || s.limit - spent < cost(s, choices)) return { kind: 'refuse', scope: s };
  }
  const session = rows.get(scopes[0]!)!;
  if (session.in_flight >= config.SVC_LLM_SESSION_CONCURRENCY) return { kind: 'wait', why: 'concurrency' };
  const moneyOf = (out: number) => (price ? Math.ceil(prompt * price.input + out * price.output) : 0);
  if (!limited.length) return { kind: 'reserve', amount: prompt, money: moneyOf(0), allowance: null };
  let allowance = want;
  for (const s of limited) {
    const row = rows.get(s)!;
    const room = s.limit - row.spent - row.reserved - Math.ceil(prompt * s.rate.input);
    const fits = s.rate.output > 0 ? Math.floor(room / (s.rate.output * choices)) : room >= 0 ? want : 0;
    if (fits < 1) return { kind: 'wait', why: s };
    allowance = Math.min(allowance, fits);
  }
  return { kind: 'reserve', amount: prompt + allowance * choices, money: moneyOf(allowance * choices), allowance };
}

class Raced extends Error {}

/** A scope's refusal: the operator's budgets in their words, a person's budget named. */
async function refusal(db: Db, config: Config, s: Scope, row: LedgerRow, held: boolean, now: Date): Promise<DomainError> {
  if (!s.budget) return budgetSpent(s.name === 'session' ? 'session' : 'account', config, held);
  if (!held) await recordRefusal(db, s.budget, 'model calls', SYSTEM_ACTOR, now);
  return budgetExceeded(s.budget, await scopeName(db, s.budget), held ? 'held' : row.spent >= s.limit ? 'spent' : 'short');
}

/**
 * Reserves a call's tokens and a place among its session's calls in flight, on every
 * scope over it: its session, its account (the operator's budgets), and the budgets a
 * person set on its project and account, in tokens or in money at the model's price.
 * Over the concurrency, or with a budget held by calls in flight, it waits up to
 * QUEUE_WAIT_MS (expiring orphaned reservations once) and then answers 429; a budget
 * spent is 429 at once.
 */
export async function reserve(
  deps: LedgerDeps,
  caller: LedgerCaller,
  body: Record<string, unknown>,
  opts: { signal?: AbortSignal; now?: () => Date; waitMs?: number } = {},
): Promise<Reservation> {
  const { config, db } = deps;
  assertBudgetable(body);
  const now = opts.now ?? systemClock.now;
  const prompt = promptEstimate(body);
  const choices = choicesOf(body);
  const want = requestedOutput(body);
  const model = typeof body.model === 'string' ? body.model : '';
  const price = priceOf(config, model);
  const scopes: Scope[] = [
    { name: 'session', key: { scope: 'session', scopeId: caller.session_id, periodStart: SESSION_PERIOD, measure: 'tokens' }, limit: config.SVC_LLM_SESSION_TOKEN_BUDGET, rate: TOKENS, money: false },
    { name: 'account', key: { scope: 'account', scopeId: caller.account_id, periodStart: accountPeriodStart(config, now()), measure: 'tokens' }, limit: config.SVC_LLM_ACCOUNT_TOKEN_BUDGET, rate: TOKENS, money: false },
  ];
  for (const b of caller.project_id ? await budgetsInForce(db, config, caller.project_id, caller.account_id, now()) : []) {
    const money = b.unit === 'money';
    // A call that cannot be priced in the budget's currency cannot be held to it.
    if (money && (!price || price.currency !== b.currency)) throw unpricedModel(model, b);
    scopes.push({ name: 'budget', key: ledgerKeyOf(b), limit: b.limit, rate: money ? { input: price!.input, output: price!.output } : TOKENS, money, budget: b });
  }
  const keys = scopes.map((s) => s.key);
  const read = async () => {
    const rows = await db.rows<LedgerRow>(llmLedgerQueries.rows(keys));
    const byScope = new Map<Scope, LedgerRow>();
    for (const s of scopes) {
      const row = rows.find((r) => r.scope === s.key.scope && r.scope_id === s.key.scopeId && r.measure === s.key.measure && new Date(r.period_start).getTime() === s.key.periodStart.getTime());
      if (row) byScope.set(s, row);
    }
    return byScope;
  };
  // Created once per scope and period (from the usage recorded before), read after.
  if ((await read()).size < scopes.length) await db.run(llmLedgerQueries.ensure(keys));
  const deadline = performance.now() + (opts.waitMs ?? QUEUE_WAIT_MS);
  let swept = false;
  for (;;) {
    opts.signal?.throwIfAborted();
    const rows = await read();
    if (rows.size < scopes.length) throw new Error('model ledger rows missing after ensure');
    const d = decide(config, scopes, rows, price, prompt, want, choices);
    if (d.kind === 'refuse') throw await refusal(db, config, d.scope, rows.get(d.scope)!, false, now());
    if (d.kind === 'reserve') {
      const at = now();
      const [session, ...others] = scopes.map((s) => ({ s, row: rows.get(s)! }));
      // In ledger_id order, as settle and the sweep lock them: no two calls deadlock.
      const ordered = [session!, ...others].sort((x, y) => Number(x.row.ledger_id) - Number(y.row.ledger_id));
      const id = await db
        .transaction(async (tx) => {
          for (const o of ordered) {
            const held =
              o === session
                ? await tx.one(llmLedgerQueries.reserveSession(o.row.ledger_id, d.amount, config.SVC_LLM_SESSION_TOKEN_BUDGET, config.SVC_LLM_SESSION_CONCURRENCY))
                : await tx.one(llmLedgerQueries.reserve(o.row.ledger_id, o.s.money ? d.money : d.amount, o.s.limit));
            if (!held) throw new Raced();
          }
          const expiresAt = new Date(at.getTime() + config.SVC_LLM_UPSTREAM_TIMEOUT_MS + EXPIRY_GRACE_MS);
          const ledgerIds = ordered.map((o) => o.row.ledger_id);
          return (await tx.one<{ reservation_id: string }>(llmLedgerQueries.insertReservation({ sessionId: caller.session_id, ledgerIds, amount: d.amount, moneyAmount: d.money, now: at, expiresAt })))!.reservation_id;
        })
        .catch((err: unknown) => {
          if (err instanceof Raced) return null;
          throw err;
        });
      if (id) {
        const budgets = others.filter((o) => o.s.budget).map((o) => ({ ledgerId: o.row.ledger_id, budget: o.s.budget! }));
        return { id, amount: d.amount, promptEstimate: prompt, outputAllowance: d.allowance, choices, price, budgets };
      }
      // Another call took the room between the read and the UPDATE: read again.
    } else if (!swept) {
      swept = true;
      await expireOrphans(db, now());
      continue;
    } else if (performance.now() >= deadline) {
      throw d.why === 'concurrency' ? tooManyCalls(config) : await refusal(db, config, d.why, rows.get(d.why)!, true, now());
    }
    await pause(RETRY_MS, opts.signal);
  }
}

function pause(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const t = setTimeout(done, ms);
    function done() {
      clearTimeout(t);
      signal?.removeEventListener('abort', done);
      resolve();
    }
    signal?.addEventListener('abort', done, { once: true });
  });
}

/** The body sent upstream: asked for no more output than was reserved. */
export function budgetedBody(body: Record<string, unknown>, r: Reservation): Record<string, unknown> {
  if (r.outputAllowance === null) return body;
  // Models that take only max_completion_tokens (OpenAI's reasoning models) refuse max_tokens beside it.
  const { max_tokens: _asked, ...rest } = body;
  return 'max_completion_tokens' in body ? { ...rest, max_completion_tokens: r.outputAllowance } : { ...rest, max_tokens: r.outputAllowance };
}

/** How a call ended, for what it is charged. */
export type CallEnd =
  | { kind: 'usage'; usage: TokenUsage }
  /** Ended without the upstream's usage (cancelled, cut): what streamed, estimated, plus the prompt's estimate. */
  | { kind: 'unreported'; outputChars: number }
  /**
   * A non-streamed call the caller left once the upstream had taken it: the upstream goes
   * on generating (and bills) whatever the caller does, so the whole reservation is charged.
   */
  | { kind: 'abandoned' }
  /** The upstream refused or was not reached: nothing was generated. */
  | { kind: 'refused' };

/** What a call is charged, as usage: the upstream's when it reported it, estimated otherwise (never zero). */
export function usageOfCall(r: Reservation, end: CallEnd): TokenUsage {
  if (end.kind === 'usage') return end.usage;
  if (end.kind === 'refused') return { input_tokens: 0, output_tokens: 0 };
  if (end.kind === 'abandoned') return { input_tokens: r.promptEstimate, output_tokens: Math.max(0, r.amount - r.promptEstimate) };
  const streamed = outputEstimate(end.outputChars);
  // The upstream stops at its max_tokens: what streamed cannot have cost more than that.
  const capped = r.outputAllowance === null ? streamed : Math.min(streamed, r.outputAllowance * r.choices);
  return { input_tokens: r.promptEstimate, output_tokens: capped };
}

/** Settles a call: its reservation becomes its charge. A no-op when the sweep expired it first (charged in full then). */
export async function settle(db: Db, r: Reservation, end: CallEnd): Promise<number> {
  const u = usageOfCall(r, end);
  const settled = await db.run(llmLedgerQueries.settle(r.id, u.input_tokens + u.output_tokens, r.price ? costOn('money', r.price, u.input_tokens, u.output_tokens) : 0));
  // Budgets a person set hear when they pass 80% and 100% (once each per limit and period).
  if (r.budgets.length) await noteCrossings(db, r.budgets);
  return settled;
}

/** Reservations a dead process left past their expiry: charged in full, their calls no longer in flight. */
export async function expireOrphans(db: Db, now = systemClock.now()): Promise<number> {
  return (await db.one<{ expired: number }>(llmLedgerQueries.expire(now)))!.expired;
}
