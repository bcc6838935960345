import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { z } from 'zod';

/**
 * The two credentials the daemon accepts.
 *
 * - Control surface (`/svc/*` except health): `Authorization: Bearer <SVC_TOKEN>`.
 * - Everything proxied: `X-Svc-User-Context: <payload>.<signature>`, where payload is
 *   base64url(JSON `{"sub","exp","port"?}`) and signature is
 *   base64url(HMAC-SHA256(key = SVC_TOKEN, message = payload)) (contracts.md).
 *
 * Both comparisons are constant-time. Nothing here does I/O.
 */

export const USER_CONTEXT_HEADER = 'x-svc-user-context';
export const USER_CONTEXT_QUERY = 'svc_ctx';
export const USER_CONTEXT_COOKIE = 'svc_ctx';

const contextSchema = z.object({
  sub: z.string().min(1),
  exp: z.number().finite(),
  port: z.number().int().min(1).max(65535).optional(),
});
export type UserContext = z.infer<typeof contextSchema>;

export type ContextCheck =
  | { ok: true; context: UserContext }
  | { ok: false; reason: 'malformed' | 'bad_signature' | 'expired' | 'wrong_port' };

const sha256 = (s: string): Buffer => createHash('sha256').update(s).digest();

/** Constant-time equality of two strings of any length (both are hashed first). */
export function safeEqual(a: string, b: string): boolean {
  return timingSafeEqual(sha256(a), sha256(b));
}

/** Whether an Authorization header carries exactly `Bearer <token>`. */
export function bearerMatches(header: string | undefined, token: string): boolean {
  if (typeof header !== 'string') return false;
  const m = /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(header);
  return m !== null && safeEqual(m[1]!, token);
}

export function signUserContext(key: string, context: UserContext): string {
  const payload = Buffer.from(JSON.stringify(context)).toString('base64url');
  const signature = createHmac('sha256', key).update(payload).digest('base64url');
  return `${payload}.${signature}`;
}

/**
 * Checks a signed value. `port` is the port the request is about to reach; a context
 * bound to another port is refused. `nowSeconds` comes from the caller (tests pin it).
 */
export function verifyUserContext(key: string, value: string, port: number, nowSeconds: number): ContextCheck {
  if (value.length > 4096) return { ok: false, reason: 'malformed' };
  const dot = value.indexOf('.');
  if (dot <= 0 || dot !== value.lastIndexOf('.')) return { ok: false, reason: 'malformed' };
  const payload = value.slice(0, dot);
  const given = value.slice(dot + 1);
  if (!/^[A-Za-z0-9_-]+$/.test(payload) || !/^[A-Za-z0-9_-]+$/.test(given)) return { ok: false, reason: 'malformed' };
  const expected = createHmac('sha256', key).update(payload).digest();
  const givenBytes = Buffer.from(given, 'base64url');
  if (givenBytes.length !== expected.length || !timingSafeEqual(givenBytes, expected)) {
    return { ok: false, reason: 'bad_signature' };
  }
  let json: unknown;
  try {
    json = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'));
  } catch {
    return { ok: false, reason: 'malformed' };
  }
  const parsed = contextSchema.safeParse(json);
  if (!parsed.success) return { ok: false, reason: 'malformed' };
  if (parsed.data.exp <= nowSeconds) return { ok: false, reason: 'expired' };
  if (parsed.data.port !== undefined && parsed.data.port !== port) return { ok: false, reason: 'wrong_port' };
  return { ok: true, context: parsed.data };
}

export const contextFailureMessage: Record<Exclude<ContextCheck, { ok: true }>['reason'] | 'missing', string> = {
  missing: 'A signed X-Svc-User-Context header is required.',
  malformed: 'The X-Svc-User-Context value is malformed.',
  bad_signature: 'The X-Svc-User-Context signature does not match.',
  expired: 'The X-Svc-User-Context value has expired.',
  wrong_port: 'The X-Svc-User-Context value is bound to another port.',
};

/** All values of one cookie name in a Cookie header (a browser may send several). */
export function cookieValues(header: string | undefined, name: string): string[] {
  if (!header) return [];
  const out: string[] = [];
  for (const part of header.split(';')) {
    const eq = part.indexOf('=');
    if (eq < 0) continue;
    if (part.slice(0, eq).trim() === name) out.push(part.slice(eq + 1).trim());
  }
  return out;
}

/** The Cookie header without the named cookie; undefined when nothing is left. */
export function stripCookie(header: string | undefined, name: string): string | undefined {
  if (!header) return undefined;
  const kept = header
    .split(';')
    .map((p) => p.trim())
    .filter((p) => p !== '' && p.slice(0, Math.max(0, p.indexOf('='))).trim() !== name);
  return kept.length ? kept.join('; ') : undefined;
}

/**
 * Splits a raw query string into the value of one parameter and the query without it.
 * Other parameters are kept byte for byte (no re-encoding), so the upstream sees them
 * exactly as the client sent them.
 */
export function takeQueryParam(query: string, name: string): { value: string | undefined; rest: string } {
  if (query === '') return { value: undefined, rest: '' };
  let value: string | undefined;
  const kept: string[] = [];
  for (const part of query.split('&')) {
    const eq = part.indexOf('=');
    const rawKey = eq < 0 ? part : part.slice(0, eq);
    if (safeDecode(rawKey) === name) {
      value ??= safeDecode(eq < 0 ? '' : part.slice(eq + 1));
      continue;
    }
    kept.push(part);
  }
  return { value, rest: kept.join('&') };
}

function safeDecode(s: string): string {
  try {
    return decodeURIComponent(s.replace(/\+/g, ' '));
  } catch {
    return s;
  }
}
