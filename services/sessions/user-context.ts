import { createHmac } from 'node:crypto';
import { epochMsOf } from '../../lib/clock.js';

/**
 * The signed `X-Svc-User-Context` value (contracts.md "The signed header"):
 * base64url(JSON {sub, exp, port?}) "." base64url(HMAC-SHA256(SVC_TOKEN, payload)).
 * The daemon verifies it (agentd/auth.ts); the server signs a fresh one per request.
 */
export const USER_CONTEXT_TTL_SECONDS = 300;

export function signUserContext(key: string, ctx: { sub: string; exp: number; port?: number }): string {
  const payload = Buffer.from(JSON.stringify(ctx)).toString('base64url');
  return `${payload}.${createHmac('sha256', key).update(payload).digest('base64url')}`;
}

export const freshContext = (key: string, sub: string, port?: number): string =>
  signUserContext(key, { sub, exp: Math.floor(epochMsOf() / 1000) + USER_CONTEXT_TTL_SECONDS, ...(port !== undefined ? { port } : {}) });
