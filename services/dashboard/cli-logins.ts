import { createHash, randomBytes } from 'node:crypto';
import { DomainError } from '../../domain/errors.js';
import type { Db, Executor } from '../../infra/db/db.js';
import { mintToken, type MintedToken } from '../tokens/service.js';
import { dashboardQueries } from '../../sql/queries/dashboard.js';

/**
 * `svc login` through the browser: a state the CLI made up, approved or denied once. An
 * approval gives the CLI a one-time code, not a token: the token is minted when the CLI
 * redeems the code, so a login whose callback never arrives leaves nothing usable behind.
 */

export interface CliLogin {
  callback: string;
  user_id: string;
  expires_at: Date;
  used_at: Date | null;
}

const hashCode = (code: string) => createHash('sha256').update(code).digest();

/**
 * Registers the state once (a state seen before is left as it is), then reads it back.
 * Logins that expired a day ago are swept on the way.
 */
export async function registerCliLogin(
  db: Executor,
  l: { state: string; callback: string; hostname: string; userId: string; expiresAt: Date },
): Promise<CliLogin | undefined> {
  await db.run(dashboardQueries.sweepCliLogins());
  await db.one(dashboardQueries.insertCliLogin(l));
  return db.one<CliLogin>(dashboardQueries.cliLogin(l.state));
}

/** Consumes the login: exactly one caller gets it back, and only before it expires; an approval with its code. */
export async function useCliLogin(
  db: Executor,
  state: string,
  userId: string,
  outcome: 'approved' | 'denied',
): Promise<{ callback: string; hostname: string; code: string | null } | undefined> {
  const code = outcome === 'approved' ? randomBytes(32).toString('base64url') : null;
  const row = await db.one<{ callback: string; hostname: string }>(dashboardQueries.useCliLogin(state, userId, outcome, code ? hashCode(code) : null));
  return row ? { ...row, code } : undefined;
}

/** The CLI's half: an approved login's code, once and in time, becomes a user token. */
export async function redeemCliLogin(db: Db, state: string, code: string): Promise<MintedToken> {
  return db.transaction(async (tx) => {
    const row = await tx.one<{ user_id: string; hostname: string }>(dashboardQueries.redeemCliLogin(state, hashCode(code)));
    if (!row) throw new DomainError('validation', 'Invalid login code', 'This login code is unknown, used or expired. Run svc login again.');
    return mintToken(tx, { userId: row.user_id, name: `svc on ${row.hostname}` });
  });
}
