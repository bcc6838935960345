import type { Executor } from '../../infra/db/db.js';
import { dashboardQueries } from '../../sql/queries/dashboard.js';

/**
 * Sign-in throttling and password lookup for the dashboard's sign-in form.
 *
 * Failures are kept per (email, client) and back off exponentially: a few free tries,
 * then a wait that doubles with each further failure (capped). Nothing locks an email for
 * everyone: guesses from one client slow that client alone, so the account's owner signs
 * in from anywhere else at once. A client that sprays many emails is held back by its
 * own total. "Client" is the principal key (api/client-key.ts).
 */
export const SIGN_IN_POLICY = {
  /** Window over which failures are counted (s). */
  windowS: 15 * 60,
  /** Failures of one (email, client) before the back-off starts. */
  freePerPair: 5,
  /** The first wait (s); doubles per further failure, up to `maxWaitS`. */
  firstWaitS: 15,
  maxWaitS: 15 * 60,
  /** Failures of one client over every email in the window. */
  maxPerClient: 50,
};

interface FailureCounts {
  by_pair: number;
  since_last_pair: number;
  by_client: number;
  client_retry_after: number;
}

/** Seconds this client must wait before trying this email again (0: go ahead). */
export async function signInWait(db: Executor, email: string, client: string, policy = SIGN_IN_POLICY): Promise<number> {
  const f = await db.one<FailureCounts>(dashboardQueries.failures(email, client, policy.windowS));
  if (!f) return 0;
  if (f.by_client >= policy.maxPerClient) return Math.max(1, Math.ceil(f.client_retry_after));
  if (f.by_pair < policy.freePerPair) return 0;
  const wait = Math.min(policy.maxWaitS, policy.firstWaitS * 2 ** (f.by_pair - policy.freePerPair));
  const left = wait - f.since_last_pair;
  return left > 0 ? Math.ceil(left) : 0;
}

export async function recordSignInFailure(db: Executor, email: string, client: string): Promise<void> {
  await db.run(dashboardQueries.recordFailure(email, client));
}

/** Forgets this client's failures for the email (and any a day old) after a successful sign-in. */
export async function clearSignInFailures(db: Executor, email: string, client: string): Promise<void> {
  await db.run(dashboardQueries.clearFailures(email, client));
}

export async function userByEmail(db: Executor, email: string): Promise<{ user_id: string; password_hash: string | null } | undefined> {
  return db.one<{ user_id: string; password_hash: string | null }>(dashboardQueries.userByEmail(email));
}
