import type { IncomingMessage } from 'node:http';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import { DomainError, retryLater } from '../domain/errors.js';
import type { Principal } from '../services/tokens/service.js';
import type { ApiServices } from '../services/api-services/index.js';
import { projectRefOf, type LoadedProject } from '../services/projects/access.js';
import { crNumberOf } from '../domain/change-request/index.js';
import type { Config } from '../infra/config.js';
import { clientKeyOf, parseTrustedProxies } from './client-key.js';
import { checkGateway } from './gateway.js';

declare module 'express-serve-static-core' {
  interface Request {
    principal?: Principal;
    /** The project the path names, read with the token (`requireAuth`); `resolveProject` applies the rule. */
    loadedProject?: LoadedProject;
  }
}

export const unauthorized = () =>
  new DomainError('unauthorized', 'Unauthorized', 'A valid token is required: Authorization: Bearer svc_pat_...');

/**
 * Failed authentications per principal key, in fixed windows. A key over the limit
 * gets 429 with `Retry-After` for every request carrying a credential until its window
 * ends, before any lookup: guessing stops, and so does the load it makes. Keyed by the
 * principal key of api/client-key.ts. Memory is bounded: expired entries are swept.
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

export const tooManyFailures = (retryAfterS: number) =>
  retryLater('rate_limited', 'Too many failed attempts', 'Too many failed authentications from this client; retry later.', retryAfterS);

/**
 * The failed-authentication limit as every credential check uses it (API bearer tokens,
 * the session proxy and its sockets, smart HTTP, clone-credential): one bucket per
 * principal key (`clientKeyOf`), shared by all of them, so a client cannot spread its
 * guesses over surfaces. A bucket is its client's alone: guesses from one sandbox or
 * address never slow another, nor the dashboard.
 */
export interface AuthGuard {
  keyOf(req: IncomingMessage): string;
  /**
   * Checks a credential: refused with 429 (before any lookup) when the caller's bucket is
   * full; otherwise the attempt counts as a failure until `check` returns a principal.
   */
  attempt<T>(req: IncomingMessage, check: () => Promise<T | null | undefined>): Promise<T | null>;
}

const guards = new WeakMap<object, AuthGuard>();

/** One guard per server configuration (so every route of one server shares its buckets). */
export function authGuardOf(config: Pick<Config, 'SVC_AUTH_FAILURE_LIMIT' | 'SVC_AUTH_FAILURE_WINDOW_S' | 'SVC_TRUST_PROXY'>): AuthGuard {
  let g = guards.get(config);
  if (!g) {
    const limiter = new AuthFailureLimiter(config.SVC_AUTH_FAILURE_LIMIT, config.SVC_AUTH_FAILURE_WINDOW_S * 1000);
    const trust = parseTrustedProxies(config.SVC_TRUST_PROXY);
    const keyOf = (req: IncomingMessage) => clientKeyOf(req, trust);
    g = {
      keyOf,
      async attempt(req, check) {
        const key = keyOf(req);
        const wait = limiter.begin(key);
        if (wait > 0) throw tooManyFailures(wait);
        const found = await check();
        if (!found) return null;
        limiter.succeeded(key);
        return found;
      },
    };
    guards.set(config, g);
  }
  return g;
}

/**
 * Requests whose credential the server itself put there after checking something no one
 * can guess (the dashboard's MAC-signed session cookie, on the proxy routes): they are no
 * guess and never wait on their address's bucket.
 */
const vouched = new WeakSet<IncomingMessage>();
export const vouchFor = (req: IncomingMessage) => void vouched.add(req);

/**
 * Bearer PATs only. The sandbox service key (SVC_TOKEN) is not a PAT and never matches:
 * it has no row in `tokens`. Failed attempts are limited per principal (AuthGuard).
 *
 * A request under `/v1/projects/:projectId/` has that project read in the token's own
 * statement (`authenticateWithProject`): every project-scoped route then resolves it
 * (`resolveProject`, the rule of services/projects/access.ts) without another round trip.
 */
export function requireAuth(auth: ApiServices['auth'], guard: AuthGuard): RequestHandler {
  return (req: Request, _res: Response, next: NextFunction) => {
    const ref = projectParamOf(req);
    const target = ref === null ? null : projectRefOf(ref);
    const crNumber = target ? crReadOf(req) : null;
    const lookup = async (value: string) => {
      if (!target) {
        const principal = await auth.authenticate(value);
        return principal && { principal };
      }
      const found = await auth.authenticateWithProject(value, target, crNumber);
      if (!found) return null;
      const project: LoadedProject = { ref: ref!, project: found.project, member: found.member };
      if (crNumber !== null && found.cr !== undefined) project.cr = { number: crNumber, cr: found.cr };
      return { principal: found.principal, project };
    };
    authenticateRequest(auth, guard, req, lookup)
      .then((found) => {
        if ('project' in found) req.loadedProject = found.project;
        next();
      })
      .catch(next);
  };
}

/**
 * The CR number of `GET /v1/projects/:projectId/change-requests/:number` without a query
 * (the read most clients repeat): its row is read with the token and the project, and the
 * route serves it once the access rule gave the caller the project (`loadedCrOf`).
 */
function crReadOf(req: Request): number | null {
  if (req.method !== 'GET') return null;
  const m = /^\/v1\/projects\/[^/?#]+\/change-requests\/([^/?#]+)$/.exec(req.originalUrl);
  if (!m) return null;
  try {
    return crNumberOf(decodeURIComponent(m[1]!));
  } catch {
    return null;
  }
}

/**
 * The `:projectId` of a `/v1/projects/:projectId/...` request, decoded as the router decodes
 * its parameters; null for any other path. Only a hint for the one read: `resolveProject`
 * uses what was read only when it names the route's own parameter.
 */
function projectParamOf(req: Request): string | null {
  const m = /^\/v1\/projects\/([^/?#]+)/.exec(req.originalUrl);
  if (!m) return null;
  try {
    return decodeURIComponent(m[1]!);
  } catch {
    return null;
  }
}

/**
 * The request's credential checked, with `lookup` reading the token (and the project the
 * path names, in the same statement, `T`): 401 without a header or
 * for a value that is no live token, 429 past the failure limit, then the gateway rule;
 * sets `req.principal`.
 */
async function authenticateRequest<T extends { principal: Principal }>(
  auth: ApiServices['auth'],
  guard: AuthGuard,
  req: Request,
  lookup: (value: string) => Promise<T | null>,
): Promise<T> {
  const header = req.headers.authorization;
  if (header === undefined) throw unauthorized(); // no credential: not a guess
  const m = typeof header === 'string' ? /^Bearer ([^\s]+)$/i.exec(header.trim()) : null;
  const check = () => (m ? lookup(m[1]!) : Promise.resolve(null));
  const found = await (vouched.has(req) ? check() : guard.attempt(req, check));
  if (!found) throw unauthorized();
  // A sandbox's token only through its own gateway; no sandbox token on the public listener.
  checkGateway(req, await auth.credentialSandbox(found.principal));
  req.principal = found.principal;
  return found;
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
