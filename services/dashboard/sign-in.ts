import type { Executor } from '../../infra/db/db.js';
import { dashboardQueries } from '../../sql/queries/dashboard.js';

/** Sign-in throttling and password lookup for the dashboard's sign-in form. */

export interface SignInFailures {
  by_email: number;
  by_client: number;
  /** Seconds until the oldest failure in the window ages out. */
  retry_after: number | null;
}

/** Failures in the last `windowSeconds`, per email and per client. */
export async function signInFailures(db: Executor, email: string, client: string, windowSeconds: number): Promise<SignInFailures | undefined> {
  return db.one<SignInFailures>(dashboardQueries.failures(email, client, windowSeconds));
}

export async function recordSignInFailure(db: Executor, email: string, client: string): Promise<void> {
  await db.run(dashboardQueries.recordFailure(email, client));
}

/** Forgets the email's failures (and any a day old) after a successful sign-in. */
export async function clearSignInFailures(db: Executor, email: string): Promise<void> {
  await db.run(dashboardQueries.clearFailures(email));
}

export async function userByEmail(db: Executor, email: string): Promise<{ user_id: string; password_hash: string | null } | undefined> {
  return db.one<{ user_id: string; password_hash: string | null }>(dashboardQueries.userByEmail(email));
}
