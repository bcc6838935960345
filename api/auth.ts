import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { DomainError } from '../domain/errors.js';
import type { Db } from '../infra/db/db.js';
import { authenticate, type Principal } from '../infra/tokens.js';

declare module 'express-serve-static-core' {
  interface Request {
    principal?: Principal;
  }
}

export const unauthorized = () =>
  new DomainError('unauthorized', 'Unauthorized', 'A valid token is required: Authorization: Bearer svc_pat_...');

/**
 * Bearer PATs only. The sandbox service key (SVC_TOKEN) is not a PAT and never matches:
 * it has no row in `tokens`.
 */
export function requireAuth(db: Db): RequestHandler {
  return (req: Request, _res: Response, next: NextFunction) => {
    const header = req.headers.authorization;
    const m = typeof header === 'string' ? /^Bearer ([^\s]+)$/i.exec(header.trim()) : null;
    if (!m) return next(unauthorized());
    authenticate(db, m[1]!).then(
      (principal) => {
        if (!principal) return next(unauthorized());
        req.principal = principal;
        next();
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
