import { createHash, randomBytes, randomInt } from 'node:crypto';
import { DomainError, retryLater, validationError } from '../../domain/errors.js';
import type { Db, Executor } from '../../infra/db/db.js';
import { mintToken, type MintedToken } from '../tokens/service.js';
import { dashboardQueries } from '../../sql/queries/dashboard.js';
import { epochMsOf } from '../../lib/clock.js';

/**
 * `svc login` through the browser, bound to the terminal that started it (gh's device flow
 * plus PKCE, RFC 7636):
 *
 * 1. The CLI registers the login (`POST /v1/cli/login`): its loopback callback and a PKCE
 *    challenge, sha256 of a verifier it keeps. The server answers a login id (`state`)
 *    and a short user code, which the CLI prints beside the link.
 * 2. The signed-in person opens `/cli/login?state=…` and types the user code: a link
 *    alone approves nothing (whoever crafted the link would have to get the code typed
 *    in, and the callback is the one the CLI registered, never one from the link).
 * 3. The approval sends a one-time code to that callback; the CLI redeems it with the
 *    verifier (`POST /v1/cli/login/token`). A code that reaches anyone else is worthless.
 */

export const LOGIN_TTL_MS = 10 * 60_000;
/** Logins waiting for a decision at once, server-wide. */
export const MAX_OPEN_LOGINS = 10_000;
/** Wrong user codes a login survives; then it can no longer be approved. */
export const MAX_CODE_ATTEMPTS = 5;
/** Consonants only: no vowels (no words), no 0/O, 1/I look-alikes. 20^8 codes. */
const ALPHABET = 'BCDFGHJKLMNPQRSTVWXZ';

export interface CliLogin {
  state: string;
  callback: string;
  hostname: string;
  expires_at: Date;
}

const sha = (s: string) => createHash('sha256').update(s).digest();

/** `abcd efgh`, `ABCD-EFGH` -> `ABCDEFGH`; anything else -> null. */
export function normalizeUserCode(raw: string): string | null {
  const s = raw.toUpperCase().replace(/[\s-]/g, '');
  return s.length === 8 && [...s].every((c) => ALPHABET.includes(c)) ? s : null;
}

/** Only a loopback callback on the CLI's own one-shot server. */
export function checkCallback(raw: string): URL {
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    throw validationError('callback is not a URL.', [{ path: 'callback', message: 'not a URL' }]);
  }
  const loopback = u.hostname === '127.0.0.1' || u.hostname === 'localhost' || u.hostname === '[::1]';
  if (u.protocol !== 'http:' || !loopback || !u.port || u.pathname !== '/callback' || u.search || u.hash || u.username || u.password) {
    throw validationError('The callback must be http://127.0.0.1:<port>/callback (the svc CLI\'s own one-shot server).', [
      { path: 'callback', message: 'not a loopback callback' },
    ]);
  }
  return u;
}

const cleanName = (s: string | undefined) => (s ?? '').replace(/[^\w.@-]/g, '').slice(0, 64);

/** Step 1: the CLI's registration. The user code is shown once, here; only its hash is kept. */
export async function startCliLogin(
  db: Executor,
  l: { callback: string; hostname?: string; codeChallenge: string },
): Promise<{ state: string; user_code: string; expires_at: string }> {
  checkCallback(l.callback);
  await db.run(dashboardQueries.sweepCliLogins());
  // Anyone may register (no token exists yet): the table is bounded, not the caller.
  const open = await db.one<{ n: number }>(dashboardQueries.openCliLoginCount(MAX_OPEN_LOGINS));
  if ((open?.n ?? 0) >= MAX_OPEN_LOGINS) {
    throw retryLater('rate_limited', 'Too many logins', 'Too many logins are waiting for approval; try again in a few minutes.', 60);
  }
  const state = randomBytes(24).toString('base64url');
  const code = Array.from({ length: 8 }, () => ALPHABET[randomInt(ALPHABET.length)]).join('');
  const expiresAt = new Date(epochMsOf() + LOGIN_TTL_MS);
  await db.run(
    dashboardQueries.insertCliLogin({
      state,
      callback: l.callback,
      hostname: cleanName(l.hostname) || 'this computer',
      userCodeHash: sha(code),
      codeChallenge: l.codeChallenge,
      expiresAt,
    }),
  );
  return { state, user_code: `${code.slice(0, 4)}-${code.slice(4)}`, expires_at: expiresAt.toISOString() };
}

/** Step 2, the page: a login still waiting for a decision, or undefined. */
export async function openCliLogin(db: Executor, state: string): Promise<CliLogin | undefined> {
  return db.one<CliLogin>(dashboardQueries.openCliLogin(state, MAX_CODE_ATTEMPTS));
}

export const wrongUserCode = () =>
  new DomainError('validation', 'Wrong code', 'That is not the code svc login printed in your terminal. Check it and try again.', {
    issues: [{ path: 'user_code', message: 'does not match' }],
  });

/**
 * Step 2, the decision. Approve needs the user code; a wrong one is counted (the login
 * dies after MAX_CODE_ATTEMPTS). Deny needs no code. Undefined: the login is not open.
 */
export async function decideCliLogin(
  db: Executor,
  state: string,
  userId: string,
  decision: { approve: true; userCode: string } | { approve: false },
): Promise<{ callback: string; hostname: string; code: string | null } | undefined> {
  if (!decision.approve) {
    const row = await db.one<{ callback: string; hostname: string }>(dashboardQueries.denyCliLogin(state, userId));
    return row ? { ...row, code: null } : undefined;
  }
  if (!(await openCliLogin(db, state))) return undefined;
  const userCode = normalizeUserCode(decision.userCode);
  const code = randomBytes(32).toString('base64url');
  const row = userCode ? await db.one<{ callback: string; hostname: string }>(dashboardQueries.approveCliLogin(state, userId, sha(userCode), sha(code), MAX_CODE_ATTEMPTS)) : undefined;
  if (row) return { ...row, code };
  await db.run(dashboardQueries.wrongCliLoginCode(state));
  throw wrongUserCode();
}

/** S256: base64url(sha256(verifier)). */
export const pkceChallenge = (verifier: string) => createHash('sha256').update(verifier).digest('base64url');

/** Step 3, the CLI's half: an approved login's code, with its verifier, once and in time, becomes a user token. */
export async function redeemCliLogin(db: Db, state: string, code: string, verifier: string): Promise<MintedToken> {
  return db.transaction(async (tx) => {
    const row = await tx.one<{ user_id: string; hostname: string }>(dashboardQueries.redeemCliLogin(state, sha(code), pkceChallenge(verifier)));
    if (!row) throw new DomainError('validation', 'Invalid login code', 'This login code is unknown, used or expired. Run svc login again.');
    return mintToken(tx, { userId: row.user_id, name: `svc on ${row.hostname}` });
  });
}
