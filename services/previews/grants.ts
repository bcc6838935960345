import { createHash, createHmac, hkdfSync, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Executor } from '../../infra/db/db.js';
import { previewQueries } from '../../sql/queries/previews.js';
import { epochMsOf, systemClock } from '../../lib/clock.js';

/**
 * How a browser gets into a preview. The dashboard (signed in, access checked) mints a
 * one-time code and sends the browser to the preview origin with it; the preview origin
 * redeems it (once, within a minute) for a cookie of its own, bound to (user, project,
 * session, port) and to the dashboard origin that may frame it, HMAC-signed with a key
 * derived from the server's secret key and valid for PREVIEW_COOKIE_TTL_S. The cookie is
 * host-only on the preview origin (`__Host-`), so another preview never receives it, and
 * the server strips it before anything reaches the sandbox.
 */
export const PREVIEW_COOKIE = '__Host-svc_preview';
export const PREVIEW_CODE_TTL_MS = 60_000;
export const PREVIEW_COOKIE_TTL_S = 30 * 60;
/** The path on a preview origin that redeems a code; an app's own path of that name is shadowed. */
export const PREVIEW_AUTH_PATH = '/.svc/preview-auth';

/**
 * The same grants open apps (`[[apps]]`, on origins of their own): `session_id` names the
 * app as `app:<name>` (no session id has that form) and `port` is 0.
 */
export const appGrantId = (name: string): string => `app:${name}`;
export const APP_GRANT_PORT = 0;

export interface PreviewGrant {
  user_id: string;
  project_id: string;
  session_id: string;
  port: number;
  /** The dashboard origin that may frame the preview (`frame-ancestors`). */
  frame_origin: string;
}

export function previewCookieKey(serverKey: Buffer): Buffer {
  return Buffer.from(hkdfSync('sha256', serverKey, Buffer.alloc(0), 'svc preview cookie v1', 32));
}

const sha256 = (s: string) => createHash('sha256').update(s).digest();

/** A code for one trip to the preview origin; only its hash is stored. */
export async function mintPreviewCode(db: Executor, g: PreviewGrant & { path: string }, now = systemClock.now()): Promise<string> {
  const code = randomBytes(32).toString('base64url');
  await db.run(previewQueries.sweepCodes());
  await db.run(previewQueries.insertCode({
    hash: sha256(code), userId: g.user_id, projectId: g.project_id, sessionId: g.session_id, port: g.port,
    frameOrigin: g.frame_origin, path: g.path, expiresAt: new Date(now.getTime() + PREVIEW_CODE_TTL_MS),
  }));
  return code;
}

/** The grant behind a code, once; null for an unknown, used or expired code. */
export async function redeemPreviewCode(db: Executor, code: string): Promise<(PreviewGrant & { path: string }) | null> {
  if (!/^[A-Za-z0-9_-]{43}$/.test(code)) return null;
  const row = await db.one<PreviewGrant & { path: string }>(previewQueries.redeemCode(sha256(code)));
  return row ? { ...row, port: Number(row.port) } : null;
}

export async function projectOfSession(db: Executor, sessionId: string): Promise<string | null> {
  return (await db.one<{ project_id: string }>(previewQueries.projectOfSession(sessionId)))?.project_id ?? null;
}

interface CookiePayload { u: string; pr: string; s: string; p: number; o: string; exp: number }

export function signPreviewCookie(key: Buffer, g: PreviewGrant, nowMs = epochMsOf()): string {
  const payload: CookiePayload = { u: g.user_id, pr: g.project_id, s: g.session_id, p: g.port, o: g.frame_origin, exp: Math.floor(nowMs / 1000) + PREVIEW_COOKIE_TTL_S };
  const body = Buffer.from(JSON.stringify(payload)).toString('base64url');
  return `${body}.${createHmac('sha256', key).update(body).digest('base64url')}`;
}

/** The grant a cookie carries, if its signature holds and it has not expired. */
export function verifyPreviewCookie(key: Buffer, value: string | undefined, nowMs = epochMsOf()): PreviewGrant | null {
  if (!value) return null;
  const [body, sig, extra] = value.split('.');
  if (!body || !sig || extra !== undefined) return null;
  const want = createHmac('sha256', key).update(body).digest();
  const got = Buffer.from(sig, 'base64url');
  if (got.length !== want.length || !timingSafeEqual(got, want)) return null;
  let p: CookiePayload;
  try {
    p = JSON.parse(Buffer.from(body, 'base64url').toString('utf8')) as CookiePayload;
  } catch {
    return null;
  }
  if (typeof p.exp !== 'number' || p.exp * 1000 <= nowMs) return null;
  return { user_id: p.u, project_id: p.pr, session_id: p.s, port: p.p, frame_origin: p.o };
}
