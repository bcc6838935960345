import { DomainError, validationError } from '../../domain/errors.js';
import type { Config } from '../../infra/config.js';
import type { Db } from '../../infra/db/db.js';
import { llmLedgerQueries, type LedgerKey, type LedgerRow } from '../../sql/queries/llm-ledger.js';
import type { TokenUsage } from './usage-tap.js';
import { systemClock } from '../../lib/clock.js';

/**
 * The model gateway's budgets (docs/models.md "Budgets"): a call reserves what it may
 * cost before it goes upstream, and settles to what it cost once it ends. The reservation
 * is the prompt's estimate plus the output the budget leaves, and the upstream is asked
 * for no more output than that (`max_tokens`), so no number of parallel calls, from any
 * number of API replicas, can make the upstream generate past a limit. The ledger's rows
 * (sql/queries/llm-ledger.ts) are written by conditional UPDATEs only: session first, then
 * account, in one transaction. A session's row also counts its calls in flight.
 */
export interface LedgerDeps {
  config: Config;
  db: Db;
}

export interface LedgerCaller {
  session_id: string;
  account_id: string;
}

export interface Reservation {
  id: string;
  /** What the ledger holds for the call until it settles. */
  amount: number;
  promptEstimate: number;
  /** Output tokens per choice the upstream is asked for at most; null: no budget applies, the body is sent as it came. */
  outputAllowance: number | null;
  choices: number;
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

type Decision = { kind: 'reserve'; amount: number; allowance: number | null } | { kind: 'refuse'; scope: 'session' | 'account' } | { kind: 'wait'; why: 'concurrency' | 'session' | 'account' };

/** What a call may reserve given the rows as read: a decision the conditional UPDATEs then hold to. */
function decide(config: Config, session: LedgerRow, account: LedgerRow, prompt: number, want: number, choices: number): Decision {
  const scopes = [
    { scope: 'session' as const, row: session, limit: config.SVC_LLM_SESSION_TOKEN_BUDGET },
    { scope: 'account' as const, row: account, limit: config.SVC_LLM_ACCOUNT_TOKEN_BUDGET },
  ].filter((s) => s.limit > 0);
  // Not even one token a choice with nothing in flight: spent, refused at once.
  for (const s of scopes) if (s.limit - s.row.spent < prompt + choices) return { kind: 'refuse', scope: s.scope };
  if (session.in_flight >= config.SVC_LLM_SESSION_CONCURRENCY) return { kind: 'wait', why: 'concurrency' };
  if (!scopes.length) return { kind: 'reserve', amount: prompt, allowance: null };
  let allowance = want;
  for (const s of scopes) {
    const room = Math.floor((s.limit - s.row.spent - s.row.reserved - prompt) / choices);
    if (room < 1) return { kind: 'wait', why: s.scope };
    allowance = Math.min(allowance, room);
  }
  return { kind: 'reserve', amount: prompt + allowance * choices, allowance };
}

class Raced extends Error {}

/**
 * Reserves a call's tokens and a place among its session's calls in flight. Over the
 * concurrency, or with the budget held by calls in flight, it waits up to QUEUE_WAIT_MS
 * (expiring orphaned reservations once) and then answers 429; a budget spent is 429 at once.
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
  const sessionKey: LedgerKey = { scope: 'session', scopeId: caller.session_id, periodStart: SESSION_PERIOD };
  const accountKey: LedgerKey = { scope: 'account', scopeId: caller.account_id, periodStart: accountPeriodStart(config, now()) };
  const read = () => db.rows<LedgerRow>(llmLedgerQueries.rows(sessionKey, accountKey));
  // Created once per scope and period (summing the usage from before the ledger), read after.
  if ((await read()).length < 2) await db.run(llmLedgerQueries.ensure(sessionKey, accountKey));
  const deadline = performance.now() + (opts.waitMs ?? QUEUE_WAIT_MS);
  let swept = false;
  for (;;) {
    opts.signal?.throwIfAborted();
    const rows = await read();
    const session = rows.find((r) => r.scope === 'session');
    const account = rows.find((r) => r.scope === 'account');
    if (!session || !account) throw new Error('model ledger rows missing after ensure');
    const d = decide(config, session, account, prompt, want, choices);
    if (d.kind === 'refuse') throw budgetSpent(d.scope, config, false);
    if (d.kind === 'reserve') {
      const at = now();
      const id = await db
        .transaction(async (tx) => {
          if (!(await tx.one(llmLedgerQueries.reserveSession(session.ledger_id, d.amount, config.SVC_LLM_SESSION_TOKEN_BUDGET, config.SVC_LLM_SESSION_CONCURRENCY)))) throw new Raced();
          if (!(await tx.one(llmLedgerQueries.reserve(account.ledger_id, d.amount, config.SVC_LLM_ACCOUNT_TOKEN_BUDGET)))) throw new Raced();
          const expiresAt = new Date(at.getTime() + config.SVC_LLM_UPSTREAM_TIMEOUT_MS + EXPIRY_GRACE_MS);
          return (await tx.one<{ reservation_id: string }>(llmLedgerQueries.insertReservation({ sessionId: caller.session_id, ledgerIds: [session.ledger_id, account.ledger_id], amount: d.amount, now: at, expiresAt })))!.reservation_id;
        })
        .catch((err: unknown) => {
          if (err instanceof Raced) return null;
          throw err;
        });
      if (id) return { id, amount: d.amount, promptEstimate: prompt, outputAllowance: d.allowance, choices };
      // Another call took the room between the read and the UPDATE: read again.
    } else if (!swept) {
      swept = true;
      await expireOrphans(db, now());
      continue;
    } else if (performance.now() >= deadline) {
      throw d.why === 'concurrency' ? tooManyCalls(config) : budgetSpent(d.why, config, true);
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

export function chargeOf(r: Reservation, end: CallEnd): number {
  const u = usageOfCall(r, end);
  return u.input_tokens + u.output_tokens;
}

/** Settles a call: its reservation becomes its charge. A no-op when the sweep expired it first (charged in full then). */
export async function settle(db: Db, r: Reservation, end: CallEnd): Promise<number> {
  return db.run(llmLedgerQueries.settle(r.id, chargeOf(r, end)));
}

/** Reservations a dead process left past their expiry: charged in full, their calls no longer in flight. */
export async function expireOrphans(db: Db, now = systemClock.now()): Promise<number> {
  return (await db.one<{ expired: number }>(llmLedgerQueries.expire(now)))!.expired;
}
