import { randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import type { Executor } from '../../infra/db/db.js';
import type { SecretBox } from '../../infra/secret-box.js';
import { hashToken, mintToken, newTokenValue } from '../tokens/service.js';
import { sandboxCredentialQueries as q } from '../../sql/queries/sessions.js';

/**
 * A sandbox's two credentials, minted when it is provisioned and revoked when it stops,
 * restarts or is removed:
 *  - SVC_TOKEN, the sandbox service key: not a PAT (its prefix is `svc_sbx_`, it has no
 *    row in `tokens`), kept as a sha256 (to authenticate the daemon's calls to the
 *    clone-credential route) and sealed (to sign X-Svc-User-Context for the proxy);
 *  - an agent-grade project token (`svc_pat_`) bound to the project and naming the
 *    sandbox (so, through this table, the session), acting as the launching user:
 *    SVC_CLI_TOKEN = SVC_EXECUTOR_TOKEN.
 * Clone credentials minted with the key (15-minute agent-grade project tokens,
 * `tokens.sandbox_id`) are revoked with them. Everything here is obtainable inside the
 * sandbox, so nothing here can merge (services/tokens/agent-policy.ts).
 */
export const SANDBOX_KEY_PREFIX = 'svc_sbx_';
/** The sandbox's model-gateway key (SVC_LLM_API_KEY): accepted by `/v1/llm` only, revoked with the sandbox. */
export const LLM_KEY_PREFIX = 'svc_llm_';

export interface SandboxCredentials {
  serviceKey: string;
  cliToken: string;
  llmKey: string;
}

export async function mintSandboxCredentials(
  tx: Executor,
  box: SecretBox,
  c: { sandboxId: string; sessionId: string; projectId: string; userId: string },
): Promise<SandboxCredentials> {
  const serviceKey = SANDBOX_KEY_PREFIX + randomBytes(32).toString('base64url');
  const llmKey = LLM_KEY_PREFIX + randomBytes(32).toString('base64url');
  const cli = await mintToken(tx, { userId: c.userId, projectId: c.projectId, name: `session ${c.sessionId}`, agent: { sandboxId: c.sandboxId } });
  await tx.run(
    q.insert({
      sandboxId: c.sandboxId,
      sessionId: c.sessionId,
      projectId: c.projectId,
      userId: c.userId,
      keyHash: hashToken(serviceKey),
      keySealed: box.seal(serviceKey),
      cliTokenId: cli.token_id,
      llmKeyHash: hashToken(llmKey),
    }),
  );
  return { serviceKey, cliToken: cli.token, llmKey };
}

export interface SandboxPrincipal {
  sandbox_id: string;
  session_id: string;
  project_id: string;
  user_id: string;
}

/** The live sandbox behind a service key, or null. */
export async function authenticateSandboxKey(db: Executor, value: string): Promise<SandboxPrincipal | null> {
  if (!/^svc_sbx_[A-Za-z0-9_-]{20,100}$/.test(value)) return null;
  const hash = hashToken(value);
  const row = await db.one<SandboxPrincipal & { key_hash: Buffer }>(q.byHash(hash));
  if (!row || !timingSafeEqual(row.key_hash, hash)) return null;
  const { key_hash: _k, ...p } = row;
  return p;
}

/**
 * The live sandbox behind a gateway key, or null. The principal names its sandbox, so a
 * caller can also require the key to arrive through that sandbox's own network path.
 */
export async function authenticateLlmKey(db: Executor, value: string): Promise<(SandboxPrincipal & { account_id: string }) | null> {
  if (!/^svc_llm_[A-Za-z0-9_-]{20,100}$/.test(value)) return null;
  const hash = hashToken(value);
  const row = await db.one<SandboxPrincipal & { account_id: string; llm_key_hash: Buffer }>(q.byLlmHash(hash));
  if (!row || !timingSafeEqual(row.llm_key_hash, hash)) return null;
  const { llm_key_hash: _k, ...p } = row;
  return p;
}

export async function serviceKeyOf(db: Executor, box: SecretBox, sandboxId: string): Promise<string | null> {
  const row = await db.one<{ key_sealed: string }>(q.sealedKey(sandboxId));
  return row ? box.open(row.key_sealed) : null;
}

/**
 * A clone credential for a live sandbox: a project token (the sandbox's project and user)
 * expiring at `expiresAt`, recorded against the sandbox so that revoking the sandbox revokes
 * it at once. Null when the sandbox's key was revoked meanwhile.
 */
export async function mintCloneCredential(db: Executor, sandboxId: string, expiresAt: Date): Promise<{ token: string; token_id: string } | null> {
  const token = newTokenValue();
  const row = await db.one<{ token_id: string }>(
    q.mintCloneToken({ sandboxId, tokenId: randomUUID(), name: 'clone-credential', hash: hashToken(token), expiresAt }),
  );
  return row ? { token, token_id: row.token_id } : null;
}

/** Revokes the session's sandbox keys, their project tokens and every clone credential minted for them. */
export async function revokeSessionCredentials(tx: Executor, sessionId: string): Promise<void> {
  await tx.run(q.revokeSessionKeys(sessionId));
  await tx.run(q.revokeSessionTokens(sessionId));
}

/** As revokeSessionCredentials, for one sandbox. */
export async function revokeSandboxCredentials(tx: Executor, sandboxId: string): Promise<void> {
  await tx.run(q.revokeSandboxKeys(sandboxId));
  await tx.run(q.revokeSandboxTokens(sandboxId));
}

/**
 * The sandbox a principal's credential belongs to (api/gateway.ts checks it against the
 * listener the request came in on): a principal that names its sandbox (`sandbox_id`, as
 * every sandbox credential will) is taken at its word; otherwise the token is looked up
 * (a sandbox's CLI token, a clone credential). Null for a person's token. A principal from
 * `authenticate` carries the answer (`credential`, read in the token's own statement), so
 * an authenticated request costs no statement here.
 */
export async function credentialSandbox(
  db: Executor,
  principal: { token_id: string; sandbox_id?: string | null; credential?: { sandbox_id: string; provider: string | null } | null },
): Promise<{ sandbox_id: string; provider: string | null } | null> {
  if (principal.credential !== undefined) return principal.credential;
  if (principal.sandbox_id) {
    const row = await db.one<{ provider: string }>(q.providerOfSandbox(principal.sandbox_id));
    return { sandbox_id: principal.sandbox_id, provider: row?.provider ?? null };
  }
  const row = await db.one<{ sandbox_id: string; provider: string | null }>(q.sandboxOfToken(principal.token_id));
  return row ? { sandbox_id: row.sandbox_id, provider: row.provider } : null;
}

/** The provider of the sandbox a service key belongs to. */
export async function sandboxProvider(db: Executor, sandboxId: string): Promise<string | null> {
  return (await db.one<{ provider: string }>(q.providerOfSandbox(sandboxId)))?.provider ?? null;
}
