import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { DomainError, retryLater } from '../domain/errors.js';
import type { Db } from '../infra/db/db.js';
import { authenticate, type Principal } from '../services/tokens/service.js';
import { credentialSandbox } from '../services/sessions/credentials.js';
import { checkGateway } from './gateway.js';

declare module 'express-serve-static-core' {
  interface Request {
    principal?: Principal;
  }
}

export const unauthorized = () =>
  new DomainError('unauthorized', 'Unauthorized', 'A valid token is required: Authorization: Bearer svc_pat_...');

/**
 * Failed authentications per client address, in fixed windows. An address over the limit
 * gets 429 with `Retry-After` for every request carrying a credential until its window
 * ends, before any lookup: guessing stops, and so does the load it makes. The address is
 * the TCP peer's (behind a reverse proxy all clients share the proxy's address: size the
 * limit for it, or let the proxy limit). Memory is bounded: expired entries are swept.
 */
export class AuthFailureLimiter {
  private readonly windows = new Map<string, { failures: number; resetAt: number }>();
  constructor(
    private readonly limit: number,
    private readonly windowMs: number,
  ) {}

  /**
   * Before an attempt: seconds to wait (refused), or 0 and the attempt counts as a
   * failure until `succeeded` says otherwise, so concurrent guesses cannot overrun the limit.
   */
  begin(addr: string, now = Date.now()): number {
    let w = this.windows.get(addr);
    if (!w || w.resetAt <= now) {
      if (this.windows.size >= 100_000) for (const [k, v] of this.windows) if (v.resetAt <= now) this.windows.delete(k);
      w = { failures: 0, resetAt: now + this.windowMs };
      this.windows.set(addr, w);
    }
    if (w.failures >= this.limit) return Math.max(1, Math.ceil((w.resetAt - now) / 1000));
    w.failures++;
    return 0;
  }

  succeeded(addr: string): void {
    const w = this.windows.get(addr);
    if (w && w.failures > 0) w.failures--;
  }
}

const tooManyFailures = (retryAfterS: number) =>
  retryLater('rate_limited', 'Too many failed attempts', 'Too many failed authentications from this address; retry later.', retryAfterS);

/**
 * Bearer PATs only. The sandbox service key (SVC_TOKEN) is not a PAT and never matches:
 * it has no row in `tokens`. Failed attempts are rate-limited per client address.
 */
export function requireAuth(db: Db, limits: { SVC_AUTH_FAILURE_LIMIT: number; SVC_AUTH_FAILURE_WINDOW_S: number } = { SVC_AUTH_FAILURE_LIMIT: 60, SVC_AUTH_FAILURE_WINDOW_S: 60 }): RequestHandler {
  const limiter = new AuthFailureLimiter(limits.SVC_AUTH_FAILURE_LIMIT, limits.SVC_AUTH_FAILURE_WINDOW_S * 1000);
  return (req: Request, _res: Response, next: NextFunction) => {
    const header = req.headers.authorization;
    const m = typeof header === 'string' ? /^Bearer ([^\s]+)$/i.exec(header.trim()) : null;
    const addr = req.socket.remoteAddress ?? 'unknown';
    if (header === undefined) return next(unauthorized()); // no credential: not a guess
    const wait = limiter.begin(addr);
    if (wait > 0) return next(tooManyFailures(wait));
    if (!m) return next(unauthorized());
    authenticate(db, m[1]!).then(
      (principal) => {
        if (!principal) return next(unauthorized());
        // A sandbox's token only through its own gateway; no sandbox token on the public listener.
        return credentialSandbox(db, principal).then((sandbox) => {
          checkGateway(req, sandbox);
          limiter.succeeded(addr);
          req.principal = principal;
          next();
        }, next).catch(next);
      },
      next,
    );
  };
}

export function principalOf(req: Request): Principal {
  if (!req.principal) throw unauthorized();
  return req.principal;
}

/** Account-level routes: user tokens only. */
export const requireUserToken: RequestHandler = (req, _res, next) => {
  const p = principalOf(req);
  if (p.project_id) {
    return next(new DomainError('forbidden', 'Forbidden', 'Project tokens cannot call account routes; use a user token.'));
  }
  next();
};
