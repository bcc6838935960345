import { randomUUID } from 'node:crypto';
import type { Db, Executor } from '../../infra/db/db.js';
import { accountQueries } from '../../sql/queries/accounts.js';
import { mintToken, type MintedToken } from '../tokens/service.js';

/**
 * `svc-server admin bootstrap`: the account and user for an email (created when missing)
 * and a fresh user token. Idempotent for the account and user; every call mints a token.
 */
export async function bootstrapUser(
  db: Db,
  opts: { email: string; name?: string },
): Promise<{ user_id: string; account_id: string; created: boolean; token: MintedToken }> {
  return db.transaction(async (tx) => {
    const user = (await tx.one<{ user_id: string; created: boolean }>(
      accountQueries.upsertUser(randomUUID(), opts.email, opts.name ?? ''),
    ))!;
    let accounts = await tx.rows<{ account_id: string }>(accountQueries.accountsOfUser(user.user_id));
    if (accounts.length === 0) {
      const accountId = randomUUID();
      await tx.run(accountQueries.insertAccount(accountId, opts.name || opts.email));
      await tx.run(accountQueries.insertMembership(accountId, user.user_id, 'owner'));
      accounts = [{ account_id: accountId }];
    }
    const token = await mintToken(tx, { userId: user.user_id, name: 'bootstrap' });
    return { user_id: user.user_id, account_id: accounts[0]!.account_id, created: user.created, token };
  });
}

export interface AccountOfUser {
  account_id: string;
  name: string;
  role: string;
}

/** The user's accounts, earliest membership first (the first is the default one). */
export async function accountsOfUser(db: Executor, userId: string): Promise<AccountOfUser[]> {
  return db.rows<AccountOfUser>(accountQueries.accountsOfUser(userId));
}

export async function isMember(db: Executor, accountId: string, userId: string): Promise<boolean> {
  return (await db.one(accountQueries.isMember(accountId, userId))) !== undefined;
}
