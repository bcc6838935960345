/**
 * Smart HTTP for every project, at `/git/<project slug or id>.git/...` (outside /v1: git
 * clients build these paths themselves). This route parses the request, authenticates the
 * caller, asks services/git-hosting/ for the git run (which repository, credentials,
 * hooks, relay) and streams it (api/git-http-stream.ts):
 *
 *   GET  .../info/refs?service=git-upload-pack|git-receive-pack   ref advertisement
 *   POST .../git-upload-pack                                      fetch / clone
 *   POST .../git-receive-pack                                     push
 *
 * Auth is HTTP Basic with a PAT as the password (any user name): a user token of a member
 * of the project's account, or a project token of that project (the sessions' clone
 * credential is one). Missing or bad: 401 with `WWW-Authenticate: Basic realm="svc"`, so
 * git asks its credential helper. A project the caller cannot see is 404, like one that
 * does not exist. Pushes go through the pre-receive hook in infra/git/pre-receive.ts,
 * told who pushes: a person, or an agent-grade credential (a sandbox's token or clone
 * credential) bound to its session branch, the only ref it may move.
 */
import { Router, type NextFunction, type Request, type Response } from 'express';
import { DomainError, notFound } from '../../domain/errors.js';
import type { ApiDeps } from '../deps.js';
import { bodyOf, statusOf } from '../errors.js';
import type { Principal } from '../../services/tokens/service.js';
import { GIT_SERVICES, type GitService } from '../../services/git-hosting/smart-http.js';
import { checkGateway } from '../gateway.js';
import { runGitService } from '../git-http-stream.js';

const ROUTE = /^\/([A-Za-z0-9][A-Za-z0-9._-]{0,127}?)(?:\.git)?\/(info\/refs|git-upload-pack|git-receive-pack)$/;

const sendError = (res: Response, err: DomainError, headers: Record<string, string> = {}) => {
  if (res.headersSent) return void res.destroy();
  if (typeof err.details.retry_after === 'number') res.set('Retry-After', String(err.details.retry_after));
  res.status(statusOf[err.code]).set(headers).json(bodyOf(err));
};

const unauthorized = () => new DomainError('unauthorized', 'Unauthorized', 'Authenticate with a token as the password (HTTP Basic).');

/** The PAT from `Authorization: Basic base64(user:token)` (or Bearer), else null. */
export function tokenFrom(header: string | undefined): string | null {
  if (typeof header !== 'string') return null;
  const bearer = /^Bearer ([^\s]+)$/i.exec(header.trim());
  if (bearer) return bearer[1]!;
  const basic = /^Basic ([A-Za-z0-9+/=]{1,1024})$/i.exec(header.trim());
  if (!basic) return null;
  const decoded = Buffer.from(basic[1]!, 'base64').toString('utf8');
  const colon = decoded.indexOf(':');
  return colon < 0 ? null : decoded.slice(colon + 1);
}

export function gitHttpRoutes(deps: ApiDeps): Router {
  const r = Router();
  const { auth, gitHosting } = deps.services;
  const log = deps.logger.child({ component: 'git-http' });

  r.use((req: Request, res: Response, next: NextFunction) => {
    handle(req, res).catch((err: unknown) => {
      if (err instanceof DomainError) return sendError(res, err);
      next(err);
    });
  });

  async function handle(req: Request, res: Response): Promise<void> {
    const m = ROUTE.exec(req.path);
    if (!m) throw notFound('Repository');
    const [, ref, action] = m as unknown as [string, string, 'info/refs' | GitService];
    let service: GitService;
    if (action === 'info/refs') {
      if (req.method !== 'GET' && req.method !== 'HEAD') return void res.status(405).set('Allow', 'GET').json(METHOD_NOT_ALLOWED);
      const s = req.query.service;
      if (typeof s !== 'string' || !(GIT_SERVICES as readonly string[]).includes(s)) {
        throw new DomainError('validation', 'Bad request', 'Only the smart protocol is served: ?service=git-upload-pack or git-receive-pack.');
      }
      service = s as GitService;
    } else {
      if (req.method !== 'POST') return void res.status(405).set('Allow', 'POST').json(METHOD_NOT_ALLOWED);
      service = action;
      if (req.headers['content-type'] !== `application/x-${service}-request`) {
        return void res.status(415).json({ error: 'Unsupported media type', message: `Expected Content-Type: application/x-${service}-request.` });
      }
      const enc = String(req.headers['content-encoding'] ?? 'identity').toLowerCase().trim();
      if (!['identity', 'gzip', 'x-gzip'].includes(enc)) {
        return void res.status(415).json({ error: 'Unsupported media type', message: 'Content-Encoding must be gzip or none.' });
      }
    }
    const principal = await authenticateGit(req);
    if (!principal) return void sendError(res, unauthorized(), { 'WWW-Authenticate': 'Basic realm="svc"' });
    const proto = req.headers['git-protocol'];
    const run = await gitHosting.open({ ref, service, advertising: action === 'info/refs', gitProtocol: typeof proto === 'string' ? proto : undefined, principal });
    await runGitService(req, res, { ...run, logger: log });
    run.streamed();
  }

  /** Failed attempts count against the caller's bucket like every other credential check (429 past it). */
  async function authenticateGit(req: Request): Promise<Principal | null> {
    if (req.headers.authorization === undefined) return null; // no credential: git's first, anonymous try
    const token = tokenFrom(req.headers.authorization);
    const principal = await deps.guard.attempt(req, () => (token ? auth.authenticate(token) : Promise.resolve(null)));
    if (!principal) return null;
    // A sandbox's token only through its own gateway (api/gateway.ts): anything else is unknown here.
    try {
      checkGateway(req, await auth.credentialSandbox(principal));
    } catch {
      return null;
    }
    return principal;
  }

  return r;
}

const METHOD_NOT_ALLOWED = { error: 'Method not allowed', message: 'This path does not take that method.' };
