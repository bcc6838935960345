import type { Executor } from '../db/db.js';
import { dashboardQueries } from '../../sql/queries/dashboard.js';

/** `svc login` through the browser: a state the CLI made up, approved or denied once. */

export interface CliLogin {
  callback: string;
  user_id: string;
  expires_at: Date;
  used_at: Date | null;
}

/** Registers the state once (a state seen before is left as it is), then reads it back. */
export async function registerCliLogin(
  db: Executor,
  l: { state: string; callback: string; hostname: string; userId: string; expiresAt: Date },
): Promise<CliLogin | undefined> {
  await db.one(dashboardQueries.insertCliLogin(l));
  return db.one<CliLogin>(dashboardQueries.cliLogin(l.state));
}

/** Consumes the login: exactly one caller gets it back, and only before it expires. */
export async function useCliLogin(
  db: Executor,
  state: string,
  userId: string,
  outcome: 'approved' | 'denied',
): Promise<{ callback: string; hostname: string } | undefined> {
  return db.one<{ callback: string; hostname: string }>(dashboardQueries.useCliLogin(state, userId, outcome));
}
