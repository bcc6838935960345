import { createHash, createHmac, hkdfSync, randomBytes, randomUUID, timingSafeEqual } from 'node:crypto';
import type { Db } from '../../infra/db/db.js';
import type { SecretBox } from '../../infra/secret-box.js';
import { mintToken } from '../tokens/service.js';
import { dashboardQueries } from '../../sql/queries/dashboard.js';
import { epochMsOf } from '../../lib/clock.js';

/**
 * Dashboard sessions: a server-side row per signed-in browser (revocable), and a cookie
 * `<session_id>.<secret>.<mac>`. The MAC (HMAC-SHA256 under a key derived from the
 * server's secret key) turns away forged cookies before any query; the row stores only
 * sha256(secret), so a database dump holds no usable cookie.
 *
 * Each session holds a user token (`dashboard sign-in`) minted at sign-in, expiring with
 * the session and revoked at sign-out: the session's revocation handle (revoking it on the
 * tokens page signs that browser out; `liveSession` checks it in the same statement) and
 * the bearer of the two paths that still go through the API's auth (the session proxy and
 * the live feed's WebSocket). Pages call services directly, not the API. The token never
 * reaches the browser: it is sealed in the row and only the server opens it.
 */
export const SESSION_COOKIE = 'svc_session';
export const SESSION_TTL_MS = 14 * 24 * 3600_000;

export interface DashboardUser {
  user_id: string;
  email: string;
  name: string;
}

export interface DashboardSession {
  session_id: string;
  csrf_token: string;
  user: DashboardUser;
  /** The sign-in token: the session proxy's and the live feed's bearer on this browser's behalf. */
  apiToken: string;
}

export interface SessionStore {
  create(userId: string): Promise<{ cookie: string; csrf: string }>;
  /** The live session behind a cookie value, or null. */
  resolve(cookie: string | undefined): Promise<DashboardSession | null>;
  revoke(sessionId: string): Promise<void>;
  /** "Sign out everywhere": every session of the user, and the API token each called with. */
  revokeAllOf(userId: string): Promise<void>;
  /** HMAC under the cookie key (also signs the pre-sign-in CSRF cookie). */
  mac(value: string): string;
}

const sha = (s: string) => createHash('sha256').update(s, 'utf8').digest();

export function cookieKey(serverKey: Buffer): Buffer {
  return Buffer.from(hkdfSync('sha256', serverKey, Buffer.alloc(0), 'svc dashboard cookie v1', 32));
}

export function sessionStore(db: Db, key: Buffer, box: SecretBox): SessionStore {
  const mac = (value: string) => createHmac('sha256', key).update(value).digest('base64url');
  return {
    mac,
    async create(userId) {
      const sessionId = randomUUID();
      const secret = randomBytes(32).toString('base64url');
      const csrf = randomBytes(24).toString('base64url');
      const expiresAt = new Date(epochMsOf() + SESSION_TTL_MS);
      await db.transaction(async (tx) => {
        const token = await mintToken(tx, { userId, name: 'dashboard sign-in', expiresAt });
        await tx.run(
          dashboardQueries.insertSession({ sessionId, userId, secretHash: sha(secret), csrf, tokenId: token.token_id, tokenEnc: box.seal(token.token), expiresAt }),
        );
      });
      const body = `${sessionId}.${secret}`;
      return { cookie: `${body}.${mac(body)}`, csrf };
    },
    async resolve(cookie) {
      if (!cookie || cookie.length > 300) return null;
      const parts = cookie.split('.');
      if (parts.length !== 3) return null;
      const [id, secret, tag] = parts as [string, string, string];
      const want = Buffer.from(mac(`${id}.${secret}`));
      const got = Buffer.from(tag);
      if (want.length !== got.length || !timingSafeEqual(want, got)) return null;
      if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.test(id)) return null;
      const row = await db.one<{ session_id: string; secret_hash: Buffer; csrf_token: string; token_enc: string; user_id: string; email: string; user_name: string; stale: boolean }>(
        dashboardQueries.liveSession(id),
      );
      if (!row || !timingSafeEqual(row.secret_hash, sha(secret))) return null;
      // Only when due (once a minute): a page render pays no statement for it otherwise.
      if (row.stale) void db.run(dashboardQueries.touchSession(id)).catch(() => {});
      return {
        session_id: row.session_id,
        csrf_token: row.csrf_token,
        user: { user_id: row.user_id, email: row.email, name: row.user_name },
        apiToken: box.open(row.token_enc),
      };
    },
    async revoke(sessionId) {
      await db.run(dashboardQueries.revokeSession(sessionId));
    },
    async revokeAllOf(userId) {
      await db.run(dashboardQueries.revokeSessionsOfUser(userId));
    },
  };
}
