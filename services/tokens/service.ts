import { createHash, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import type { Executor } from '../../infra/db/db.js';
import { decodeLiveTokenProjectRow, tokenQueries, type LiveTokenRow } from '../../sql/queries/accounts.js';
import type { ProjectRecord } from '../../domain/project.js';
import type { ChangeRequest } from '../../domain/change-request/index.js';
import { crOfRow, decodeCrRow } from '../../sql/queries/change-request-row.js';
import { epochMsOf } from '../../lib/clock.js';

/**
 * Personal access tokens. The value is shown once, at minting; only its sha256 is stored.
 * Lookup is by hash (an index probe), and the stored hash is compared again in constant
 * time, so neither step leaks how much of a guess was right.
 */
export const TOKEN_PREFIX = 'svc_pat_';

/**
 * `person`: a user token, or a project token a user minted (`POST .../cli-token`): the
 * spec's rights. `agent`: a credential handed to a sandbox (its SVC_CLI_TOKEN, a clone
 * credential): what services/tokens/agent-policy.ts allows, never a merge.
 */
export type TokenGrade = 'person' | 'agent';

export interface Principal {
  token_id: string;
  user_id: string;
  email: string;
  user_name: string;
  /** Set for project tokens: the one project this token may touch. */
  project_id: string | null;
  grade: TokenGrade;
  /**
   * Agent tokens: the sandbox and session they were minted for (null otherwise). The
   * session id is also the one branch the agent may push.
   */
  sandbox_id: string | null;
  session_id: string | null;
  /**
   * The sandbox this credential belongs to and its provider (null: a person's), read with
   * the token by `authenticate` for the gateway rule (api/gateway.ts); absent on a
   * principal made any other way, which services/sessions/credentials.ts then looks up.
   */
  credential?: { sandbox_id: string; provider: string | null } | null;
}

export const hashToken = (value: string): Buffer => createHash('sha256').update(value, 'utf8').digest();

export const looksLikeToken = (value: string): boolean => /^svc_pat_[A-Za-z0-9_-]{20,200}$/.test(value);

export interface MintedToken {
  token: string;
  token_id: string;
  name: string;
  project_id: string | null;
  created_at: string;
  expires_at: string | null;
}

/** A new personal access token's secret value (only its hash is stored). */
export const newTokenValue = (): string => TOKEN_PREFIX + randomBytes(32).toString('base64url');

export async function mintToken(
  db: Executor,
  opts: {
    userId: string;
    projectId?: string | null;
    name?: string;
    expiresAt?: Date | null;
    /** An agent token is bound to a project and names the sandbox it is minted for. */
    agent?: { sandboxId: string };
  },
): Promise<MintedToken> {
  if (opts.agent && !opts.projectId) throw new Error('an agent token is bound to a project');
  const token = newTokenValue();
  const row = await db.one<{ token_id: string; name: string; project_id: string | null; created_at: Date; expires_at: Date | null }>(
    tokenQueries.insert({
      tokenId: randomUUID(),
      userId: opts.userId,
      projectId: opts.projectId ?? null,
      name: opts.name ?? '',
      hash: hashToken(token),
      expiresAt: opts.expiresAt ?? null,
      grade: opts.agent ? 'agent' : 'person',
      sandboxId: opts.agent?.sandboxId ?? null,
    }),
  );
  return {
    token,
    token_id: row!.token_id,
    name: row!.name,
    project_id: row!.project_id,
    created_at: row!.created_at.toISOString(),
    expires_at: row!.expires_at?.toISOString() ?? null,
  };
}

/** The principal behind a bearer value, or null for anything unknown, revoked or expired. */
export async function authenticate(db: Executor, value: string): Promise<Principal | null> {
  if (!looksLikeToken(value)) return null;
  const hash = hashToken(value);
  return principalOfTokenRow(db, hash, await db.one<LiveTokenRow>(tokenQueries.byHash(hash)));
}

/**
 * `authenticate` for a request that names a project (`ref`: a lowercase uuid or a slug, as
 * `projectRefOf` gives it), with that project and whether the token's user is a member of
 * its account read in the same statement (`tokenQueries.byHashWithProject`): a project
 * token's own project, or the one the reference names for a user. Whether the caller may
 * have it is `projectForCaller`'s rule (services/projects/access.ts), applied by the caller.
 * `crNumber`: that project's CR with this number read too (`cr`, null when none), for a
 * request whose route reads it first; served only once the rule gave the caller the project.
 */
export async function authenticateWithProject(
  db: Executor,
  value: string,
  ref: { ref: string; isUuid: boolean },
  crNumber: number | null = null,
): Promise<{ principal: Principal; project: ProjectRecord | null; member: boolean; cr?: ChangeRequest | null } | null> {
  if (!looksLikeToken(value)) return null;
  const hash = hashToken(value);
  const raw = await db.one(tokenQueries.byHashWithProject(hash, ref.ref, ref.isUuid, crNumber));
  if (!raw) return null;
  const { project, member, cr, ...row } = decodeLiveTokenProjectRow(raw);
  const principal = principalOfTokenRow(db, hash, row);
  if (!principal) return null;
  return crNumber === null ? { principal, project, member } : { principal, project, member, cr: cr ? crOfRow(decodeCrRow(cr)) : null };
}

/**
 * The principal a live-token row (`liveTokenByHash`, alone or within a larger read) gives
 * for `hash`: null without a row, or unless the stored hash equals it (compared in
 * constant time). Touches `last_used_at` at most once a minute, off the request's path.
 */
export function principalOfTokenRow(db: Executor, hash: Buffer, row: LiveTokenRow | undefined): Principal | null {
  if (!row || !timingSafeEqual(row.token_hash, hash)) return null;
  const { token_hash: _h, last_used_at: used, credential_sandbox_id: sandboxId, credential_provider: provider, ...principal } = row;
  if (!used || epochMsOf() - used.getTime() > 60_000) void db.run(tokenQueries.touch(principal.token_id)).catch(() => {});
  return { ...principal, credential: sandboxId ? { sandbox_id: sandboxId, provider } : null };
}

/** Of `tokenIds`, those no longer live (revoked, expired, deleted). */
export async function deadTokens(db: Executor, tokenIds: string[]): Promise<Set<string>> {
  if (tokenIds.length === 0) return new Set();
  return new Set((await db.rows<{ token_id: string }>(tokenQueries.deadAmong(tokenIds))).map((r) => r.token_id));
}

export interface TokenListing {
  token_id: string;
  name: string;
  project_id: string | null;
  created_at: Date;
  expires_at: Date | null;
  last_used_at: Date | null;
  /** Issued to a sandbox (its CLI token, clone credentials): null for the person's own. */
  sandbox_id: string | null;
  /** That sandbox's session, when known. */
  session_id: string | null;
}

/** The user's live tokens (user and project tokens), newest first; never their values. */
export async function listTokens(db: Executor, userId: string): Promise<TokenListing[]> {
  return db.rows<TokenListing>(tokenQueries.listForUser(userId));
}

/** Revokes one of the user's live tokens; false for another user's, an unknown or a revoked one. */
export async function revokeToken(db: Executor, userId: string, tokenId: string): Promise<boolean> {
  return (await db.one(tokenQueries.revokeForUser(userId, tokenId))) !== undefined;
}
