import type { Query } from '../query.js';

/** What a ledger row counts (migration 205): 'tokens' for sessions and the operator's account budget, else a person's budget's unit and period. */
export type LedgerMeasure = 'tokens' | 'tokens/day' | 'tokens/month' | 'money/day' | 'money/month';

/** One ledger row's key: a scope, its id, the period it counts and what it counts (migrations 120, 205). */
export interface LedgerKey {
  scope: 'session' | 'account' | 'project';
  scopeId: string;
  periodStart: Date;
  measure: LedgerMeasure;
}

export interface LedgerRow {
  ledger_id: string;
  scope: string;
  scope_id: string;
  period_start: Date;
  measure: LedgerMeasure;
  spent: number;
  reserved: number;
  in_flight: number;
}

const tokens = `COALESCE(sum(input_tokens + output_tokens), 0)`;
const keys = (ks: LedgerKey[]) => [ks.map((k) => k.scope), ks.map((k) => k.scopeId), ks.map((k) => k.periodStart), ks.map((k) => k.measure)];
const unnested = `unnest($1::text[], $2::text[], $3::timestamptz[], $4::text[]) AS k(scope, scope_id, period_start, measure)`;
/** The usage a person's budget counts: its project's or account's calls in its period. */
const ofScope = `((k.scope = 'project' AND u.project_id = k.scope_id::uuid) OR (k.scope = 'account' AND u.account_id = k.scope_id::uuid)) AND u.created_at >= k.period_start`;
/**
 * Rows shared by calls (an account's, a project's) are locked in ledger_id order by every
 * statement that writes several (reserve takes them in that order too): a settle and a
 * reserve touching the same two rows never deadlock.
 */
const lockInOrder = (ids: string) => `SELECT ledger_id FROM llm_ledger WHERE ledger_id IN (${ids}) ORDER BY ledger_id FOR UPDATE`;
/** On a money row a call reserves and is charged micro-units; on any other, tokens. */
const byMeasure = (money: string, tokens_: string) => `CASE WHEN l.measure LIKE 'money/%' THEN ${money} ELSE ${tokens_} END`;

/**
 * The model gateway's ledger (migrations 120, 205; services/llm/ledger.ts). Every write is
 * one conditional statement, so two API replicas reserving at once cannot both pass a limit.
 */
export const llmLedgerQueries = {
  /**
   * Creates the rows of a call's scopes that do not exist yet. A session's and the
   * operator's account row start from the usage recorded before the ledger existed
   * (`ledgered = false`); a person's budget's row from all its scope's usage in the period
   * (it is created when the first call, session or read meets the budget).
   */
  ensure: (ks: LedgerKey[]): Query => ({
    name: 'llm_ledger_ensure',
    text: `INSERT INTO llm_ledger (scope, scope_id, period_start, measure, spent)
      SELECT k.scope, k.scope_id, k.period_start, k.measure, CASE
        WHEN k.measure = 'tokens' AND k.scope = 'session' THEN (SELECT ${tokens} FROM llm_usage u WHERE u.session_id = k.scope_id AND NOT ledgered)
        WHEN k.measure = 'tokens' THEN (SELECT ${tokens} FROM llm_usage u WHERE u.account_id = k.scope_id::uuid AND u.created_at >= k.period_start AND NOT ledgered)
        WHEN k.measure LIKE 'tokens/%' THEN (SELECT ${tokens} FROM llm_usage u WHERE ${ofScope})
        ELSE (SELECT COALESCE(ceil(sum(u.cost) * 1000000), 0)::bigint FROM llm_usage u WHERE ${ofScope})
      END
      FROM ${unnested}
      ON CONFLICT (scope, scope_id, period_start, measure) DO NOTHING`,
    values: keys(ks),
  }),
  rows: (ks: LedgerKey[]): Query => ({
    name: 'llm_ledger_rows',
    text: `SELECT l.ledger_id::text, l.scope, l.scope_id, l.period_start, l.measure, l.spent::float8 AS spent, l.reserved::float8 AS reserved, l.in_flight
      FROM llm_ledger l JOIN ${unnested}
        ON l.scope = k.scope AND l.scope_id = k.scope_id AND l.period_start = k.period_start AND l.measure = k.measure`,
    values: keys(ks),
  }),
  /**
   * Reserves `amount` on a session's row and counts the call in flight, only while the
   * session stays within its limit (0: none) and its concurrency. No row: refused.
   */
  reserveSession: (ledgerId: string, amount: number, limit: number, concurrency: number): Query => ({
    name: 'llm_ledger_reserve_session',
    text: `UPDATE llm_ledger SET reserved = reserved + $2, in_flight = in_flight + 1
      WHERE ledger_id = $1 AND in_flight < $4 AND ($3 = 0 OR spent + reserved + $2 <= $3)
      RETURNING ledger_id`,
    values: [ledgerId, amount, limit, concurrency],
  }),
  /** Reserves `amount` on any other scope's row, only within its limit (0: none). */
  reserve: (ledgerId: string, amount: number, limit: number): Query => ({
    name: 'llm_ledger_reserve',
    text: `UPDATE llm_ledger SET reserved = reserved + $2
      WHERE ledger_id = $1 AND ($3 = 0 OR spent + reserved + $2 <= $3)
      RETURNING ledger_id`,
    values: [ledgerId, amount, limit],
  }),
  insertReservation: (r: { sessionId: string; ledgerIds: string[]; amount: number; moneyAmount: number; now: Date; expiresAt: Date }): Query => ({
    text: `INSERT INTO llm_reservations (session_id, ledger_ids, amount, money_amount, created_at, expires_at)
      VALUES ($1, $2::bigint[], $3, $4, $5, $6) RETURNING reservation_id::text`,
    values: [r.sessionId, r.ledgerIds, r.amount, r.moneyAmount, r.now, r.expiresAt],
  }),
  /**
   * Settles one reservation: its rows give back what it reserved and are charged `charge`
   * tokens (money rows: `moneyCharge` micro-units); the session's row counts one call fewer
   * in flight. Nothing when the sweep took it first (it was charged in full then).
   */
  settle: (reservationId: string, charge: number, moneyCharge: number): Query => ({
    name: 'llm_ledger_settle',
    text: `WITH gone AS (DELETE FROM llm_reservations WHERE reservation_id = $1 RETURNING ledger_ids, amount, money_amount),
      locked AS (${lockInOrder('SELECT unnest(ledger_ids) FROM gone')})
      UPDATE llm_ledger l
        SET reserved = l.reserved - ${byMeasure('gone.money_amount', 'gone.amount')}, spent = l.spent + ${byMeasure('$3::bigint', '$2::bigint')},
            in_flight = l.in_flight - CASE WHEN l.scope = 'session' THEN 1 ELSE 0 END
      FROM gone, locked WHERE l.ledger_id = locked.ledger_id`,
    values: [reservationId, charge, moneyCharge],
  }),
  /**
   * Reservations past their expiry (a process that died mid-call) are charged in full:
   * summed per ledger row first, as one UPDATE touches a row once.
   */
  expire: (now: Date): Query => ({
    name: 'llm_ledger_expire',
    text: `WITH gone AS (DELETE FROM llm_reservations WHERE expires_at <= $1 RETURNING ledger_ids, amount, money_amount),
      per_row AS (
        SELECT id AS ledger_id, sum(gone.amount) AS amount, sum(gone.money_amount) AS money_amount, count(*) AS calls
        FROM gone, unnest(gone.ledger_ids) AS id GROUP BY id
      ),
      locked AS (${lockInOrder('SELECT ledger_id FROM per_row')}),
      charged AS (
        UPDATE llm_ledger l
          SET reserved = l.reserved - ${byMeasure('per_row.money_amount', 'per_row.amount')}, spent = l.spent + ${byMeasure('per_row.money_amount', 'per_row.amount')},
              in_flight = l.in_flight - CASE WHEN l.scope = 'session' THEN per_row.calls::int ELSE 0 END
        FROM per_row, locked WHERE l.ledger_id = per_row.ledger_id AND l.ledger_id = locked.ledger_id
        RETURNING 1
      )
      SELECT (SELECT count(*) FROM gone)::int AS expired, (SELECT count(*) FROM charged)::int AS rows`,
    values: [now],
  }),
  /**
   * Marks a row's crossing of `at` (80% or 100% of `limit`) once per limit: the one caller
   * that gets a row back records it. A raised budget is a new limit, crossed again.
   */
  cross: (ledgerId: string, limit: number, pct: 80 | 100): Query => ({
    name: `llm_ledger_cross_${pct}`,
    text: `UPDATE llm_ledger SET ${pct === 80 ? 'warned_limit' : 'spent_limit'} = $2
      WHERE ledger_id = $1 AND spent * 100 >= $2::bigint * ${pct} AND ${pct === 80 ? 'warned_limit' : 'spent_limit'} IS DISTINCT FROM $2
      RETURNING spent::float8 AS spent`,
    values: [ledgerId, limit],
  }),
};
