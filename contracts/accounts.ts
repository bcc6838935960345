import { z } from 'zod';
import { text, time, uuid } from './common.js';

/** Accounts and tokens (contracts.md "Projects and tokens"; docs/api.md "Accounts and tokens"). */

export const CreateTokenBody = z.strictObject({
  name: text(200).optional(),
  /** Days until the token stops working (none: it lasts until revoked). */
  expires_in_days: z.number().int().min(1).max(3650).optional(),
});

/** `svc login` redeems the one-time code the dashboard's approval sent to its callback. */
export const RedeemCliLoginBody = z.strictObject({
  state: z.string().regex(/^[A-Za-z0-9_-]{16,128}$/, 'not a login state'),
  code: z.string().regex(/^[A-Za-z0-9_-]{16,128}$/, 'not a login code'),
  code_verifier: z.string().regex(/^[A-Za-z0-9._~-]{43,128}$/, 'not a PKCE verifier (43 to 128 characters)'),
});

/** `svc login` registers its login: its loopback callback and a PKCE (S256) challenge. */
export const StartCliLoginBody = z.strictObject({
  callback: z.string().max(200),
  hostname: z.string().max(200).optional(),
  code_challenge: z.string().regex(/^[A-Za-z0-9_-]{43}$/, 'base64url of a sha256'),
  code_challenge_method: z.literal('S256'),
});

/** The registered login: its id (state), the code the approval page asks for, and when it lapses. */
export const StartedCliLoginSchema = z.strictObject({ state: z.string(), user_code: z.string(), expires_at: z.string() });

/** A token as listed: never its value. */
export const TokenSchema = z.strictObject({
  token_id: uuid,
  name: z.string(),
  /** Set for a project token (bound to that project, acting as its user). */
  project_id: uuid.nullable(),
  created_at: time,
  expires_at: time.nullable(),
  last_used_at: time.nullable(),
});
export type Token = z.infer<typeof TokenSchema>;
export const TokenList = z.strictObject({ tokens: z.array(TokenSchema) });

/** A token just minted: the only time its value is shown. */
export const MintedTokenSchema = z.strictObject({
  token: z.string().regex(/^svc_pat_[A-Za-z0-9_-]{20,200}$/),
  token_id: uuid,
  name: z.string(),
  project_id: uuid.nullable(),
  created_at: time,
  expires_at: time.nullable(),
});
export type MintedToken = z.infer<typeof MintedTokenSchema>;

export const AccountSchema = z.strictObject({
  account_id: uuid,
  name: z.string(),
  /** The caller's role in it (`owner`, `member`). */
  role: z.string(),
});

/** `GET /v1/accounts/me`: the caller, the active account (the first of `accounts`) and the token that asked. */
export const MeSchema = z.strictObject({
  user: z.strictObject({ user_id: uuid, email: z.string(), name: z.string() }),
  account: AccountSchema.nullable(),
  accounts: z.array(AccountSchema),
  /** What `DELETE /v1/accounts/tokens/:tokenId` takes (`svc login` revokes the token it replaces). */
  token_id: uuid,
});
export type Me = z.infer<typeof MeSchema>;
