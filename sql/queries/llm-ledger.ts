import type { Query } from '../query.js';

/** One ledger row's key: a scope, its id, and the period it counts (migration 120). */
export interface LedgerKey {
  scope: 'session' | 'account';
  scopeId: string;
  periodStart: Date;
}

export interface LedgerRow {
  ledger_id: string;
  scope: string;
  scope_id: string;
  spent: number;
  reserved: number;
  in_flight: number;
}

const tokens = `COALESCE(sum(input_tokens + output_tokens), 0)`;

/**
 * The model gateway's ledger (migration 120, services/llm/ledger.ts). Every write is one
 * conditional statement, so two API replicas reserving at once cannot both pass a limit.
 */
export const llmLedgerQueries = {
  /**
   * Creates the rows of a call's scopes that do not exist yet, starting from the usage
   * recorded before the ledger existed (`ledgered = false`), so no earlier spend is lost.
   */
  ensure: (session: LedgerKey, account: LedgerKey): Query => ({
    name: 'llm_ledger_ensure',
    text: `INSERT INTO llm_ledger (scope, scope_id, period_start, spent)
      SELECT 'session', $1::text, $2::timestamptz, (SELECT ${tokens} FROM llm_usage WHERE session_id = $1::text AND NOT ledgered)
      UNION ALL
      SELECT 'account', $3::text, $4::timestamptz, (SELECT ${tokens} FROM llm_usage WHERE account_id = $3::text::uuid AND created_at >= $4::timestamptz AND NOT ledgered)
      ON CONFLICT (scope, scope_id, period_start) DO NOTHING`,
    values: [session.scopeId, session.periodStart, account.scopeId, account.periodStart],
  }),
  rows: (session: LedgerKey, account: LedgerKey): Query => ({
    name: 'llm_ledger_rows',
    text: `SELECT ledger_id::text, scope, scope_id, spent::float8 AS spent, reserved::float8 AS reserved, in_flight
      FROM llm_ledger
      WHERE (scope = 'session' AND scope_id = $1 AND period_start = $2) OR (scope = 'account' AND scope_id = $3 AND period_start = $4)`,
    values: [session.scopeId, session.periodStart, account.scopeId, account.periodStart],
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
  insertReservation: (r: { sessionId: string; ledgerIds: string[]; amount: number; now: Date; expiresAt: Date }): Query => ({
    text: `INSERT INTO llm_reservations (session_id, ledger_ids, amount, created_at, expires_at)
      VALUES ($1, $2::bigint[], $3, $4, $5) RETURNING reservation_id::text`,
    values: [r.sessionId, r.ledgerIds, r.amount, r.now, r.expiresAt],
  }),
  /**
   * Settles one reservation: its rows give back what it reserved and are charged `charge`;
   * the session's row counts one call fewer in flight. Nothing when the sweep took it
   * first (it was charged in full then). Answers the rows touched.
   */
  settle: (reservationId: string, charge: number): Query => ({
    name: 'llm_ledger_settle',
    text: `WITH gone AS (DELETE FROM llm_reservations WHERE reservation_id = $1 RETURNING ledger_ids, amount)
      UPDATE llm_ledger l
        SET reserved = l.reserved - gone.amount, spent = l.spent + $2,
            in_flight = l.in_flight - CASE WHEN l.scope = 'session' THEN 1 ELSE 0 END
      FROM gone WHERE l.ledger_id = ANY (gone.ledger_ids)`,
    values: [reservationId, charge],
  }),
  /**
   * Reservations past their expiry (a process that died mid-call) are charged in full:
   * summed per ledger row first, as one UPDATE touches a row once.
   */
  expire: (now: Date): Query => ({
    name: 'llm_ledger_expire',
    text: `WITH gone AS (DELETE FROM llm_reservations WHERE expires_at <= $1 RETURNING ledger_ids, amount),
      per_row AS (
        SELECT id AS ledger_id, sum(gone.amount) AS amount, count(*) AS calls
        FROM gone, unnest(gone.ledger_ids) AS id GROUP BY id
      ),
      charged AS (
        UPDATE llm_ledger l
          SET reserved = l.reserved - per_row.amount, spent = l.spent + per_row.amount,
              in_flight = l.in_flight - CASE WHEN l.scope = 'session' THEN per_row.calls::int ELSE 0 END
        FROM per_row WHERE l.ledger_id = per_row.ledger_id
        RETURNING 1
      )
      SELECT (SELECT count(*) FROM gone)::int AS expired, (SELECT count(*) FROM charged)::int AS rows`,
    values: [now],
  }),
};
