import { randomBytes, scrypt as scryptCb, timingSafeEqual, type ScryptOptions } from 'node:crypto';
import type { Db } from '../../infra/db/db.js';
import { dashboardQueries } from '../../sql/queries/dashboard.js';
import { validationError } from '../../domain/errors.js';

/**
 * Passwords: scrypt (node:crypto) with the parameters stored beside the hash, so they can
 * be raised later without invalidating existing hashes:
 * `scrypt$<N>$<r>$<p>$<salt>$<hash>` (salt and hash base64url).
 */
const PARAMS = { N: 16384, r: 8, p: 1 };
const KEYLEN = 32;
export const MIN_PASSWORD = 8;
export const MAX_PASSWORD = 1024;

const scrypt = (password: string, salt: Buffer, keylen: number, opts: ScryptOptions) =>
  new Promise<Buffer>((resolve, reject) => scryptCb(password, salt, keylen, opts, (err, key) => (err ? reject(err) : resolve(key))));

export async function hashPassword(password: string): Promise<string> {
  if (password.length < MIN_PASSWORD) throw validationError(`A password needs at least ${MIN_PASSWORD} characters.`, [{ path: 'password', message: 'too short' }]);
  if (password.length > MAX_PASSWORD) throw validationError(`A password has at most ${MAX_PASSWORD} characters.`, [{ path: 'password', message: 'too long' }]);
  const salt = randomBytes(16);
  const key = await scrypt(password, salt, KEYLEN, { ...PARAMS, maxmem: 64 * 1024 * 1024 });
  return ['scrypt', PARAMS.N, PARAMS.r, PARAMS.p, salt.toString('base64url'), key.toString('base64url')].join('$');
}

export async function verifyPassword(password: string, stored: string | null | undefined): Promise<boolean> {
  // No hash (no password set): still spend the time, so timing does not tell which.
  const parts = (stored ?? '').split('$');
  const valid = parts.length === 6 && parts[0] === 'scrypt';
  const [N, r, p] = valid ? parts.slice(1, 4).map(Number) : [PARAMS.N, PARAMS.r, PARAMS.p];
  if (!N || !r || !p || N > 1 << 20 || r > 32 || p > 16) return false;
  const salt = valid ? Buffer.from(parts[4]!, 'base64url') : randomBytes(16);
  const expected = valid ? Buffer.from(parts[5]!, 'base64url') : randomBytes(KEYLEN);
  if (password.length > MAX_PASSWORD) return false;
  const key = await scrypt(password, salt, expected.length, { N, r, p, maxmem: 256 * N * r * 2 + 1024 * 1024 });
  return valid && timingSafeEqual(key, expected);
}

/**
 * `svc-server admin set-password` (and bootstrap --password-stdin). A new password ends
 * every dashboard session of the user (and the API token each one called with), in the
 * same transaction: whoever knew the old one is signed out.
 */
export async function setPassword(db: Db, email: string, password: string): Promise<boolean> {
  const hash = await hashPassword(password);
  return db.transaction(async (tx) => {
    const user = await tx.one<{ user_id: string }>(dashboardQueries.setPassword(email, hash));
    if (!user) return false;
    await tx.run(dashboardQueries.revokeSessionsOfUser(user.user_id));
    return true;
  });
}
