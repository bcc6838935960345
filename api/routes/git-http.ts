/**
 * Smart HTTP for every project, at `/git/<project slug or id>.git/...` (outside /v1: git
 * clients build these paths themselves): a managed repository is served as is; a
 * `file://` one through the server's view of it (its objects and refs, the server's config
 * and hooks: a push moves the repository's refs, none of its hooks run); a project
 * with a network remote through its relay (infra/git/relay.ts: fetched from the remote
 * before each advertisement, pushes relayed to the remote with the stored credentials,
 * which never leave the server):
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
import path from 'node:path';
import { DomainError, notFound } from '../../domain/errors.js';
import type { ApiDeps } from '../deps.js';
import { projectForCaller } from '../../services/projects/access.js';
import { bodyOf, statusOf } from '../errors.js';
import { authenticate, type Principal } from '../../services/tokens/service.js';
import { credentialSandbox } from '../../services/sessions/credentials.js';
import { checkGateway } from '../gateway.js';
import { managedRepoExists, managedRepoPath, reposDirOf } from '../../infra/git/managed-repo.js';
import { installHooks } from '../../infra/git/pre-receive.js';
import { RelayRepos, relayDirOf, relayEnv } from '../../infra/git/relay.js';
import { checkRepoUrl, repoUrlPolicy } from '../../infra/git/url-policy.js';
import { servedLocalView } from '../../infra/git/open-repo.js';
import type { RepoLocation } from '../../infra/git/port.js';
import { repoCredentials } from '../../infra/git/credentials.js';
import { assertBranchName } from '../../domain/refs.js';
import type { ProjectRecord } from '../../domain/project.js';
import { runGitService } from '../git-http-stream.js';
import { authGuardOf } from '../auth.js';

const SERVICES = ['git-upload-pack', 'git-receive-pack'] as const;
type Service = (typeof SERVICES)[number];
const ROUTE = /^\/([A-Za-z0-9][A-Za-z0-9._-]{0,127}?)(?:\.git)?\/(info\/refs|git-upload-pack|git-receive-pack)$/;
/** `version=2`, or `key=value` items joined by `:` (git's own format); nothing else reaches git. */
const GIT_PROTOCOL = /^[A-Za-z0-9._-]{1,32}(=[A-Za-z0-9._-]{0,64})?(:[A-Za-z0-9._-]{1,32}(=[A-Za-z0-9._-]{0,64})?){0,7}$/;

export interface GitHttpOptions {
  /** Transfers idle this long are cut (ms). */
  idleTimeoutMs?: number;
  /** Largest upload-pack request (negotiation), after decompression. */
  maxFetchRequestBytes?: number;
}

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

export function gitHttpRoutes(deps: ApiDeps, opts: GitHttpOptions = {}): Router {
  const r = Router();
  const reposDir = reposDirOf(deps.config);
  const hooks = installHooks(path.join(deps.config.dataDir, 'git-hooks'));
  hooks.catch((err: unknown) => deps.logger.error({ err: (err as Error).message }, 'could not install the git hooks'));
  const log = deps.logger.child({ component: 'git-http' });
  const guard = authGuardOf(deps.config);
  const policy = repoUrlPolicy(deps.config);
  const relays = new RelayRepos(relayDirOf(deps.config), policy);

  r.use((req: Request, res: Response, next: NextFunction) => {
    handle(req, res).catch((err: unknown) => {
      if (err instanceof DomainError) return sendError(res, err);
      next(err);
    });
  });

  async function handle(req: Request, res: Response): Promise<void> {
    const m = ROUTE.exec(req.path);
    if (!m) throw notFound('Repository');
    const [, ref, action] = m as unknown as [string, string, 'info/refs' | Service];
    let service: Service;
    if (action === 'info/refs') {
      if (req.method !== 'GET' && req.method !== 'HEAD') return void res.status(405).set('Allow', 'GET').json(METHOD_NOT_ALLOWED);
      const s = req.query.service;
      if (typeof s !== 'string' || !(SERVICES as readonly string[]).includes(s)) {
        throw new DomainError('validation', 'Bad request', 'Only the smart protocol is served: ?service=git-upload-pack or git-receive-pack.');
      }
      service = s as Service;
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
    const project = await visibleProject(principal, ref);
    // Every member may write; the hook still guards the default branch and session branches.
    const advertising = action === 'info/refs';
    // A `file://` project: the server's view of its repository, with the server's hook only.
    const view = project.repo_managed ? null : await localView(project);
    const remote = project.repo_managed || view ? null : locationOf(project);
    let repoPath: string;
    if (view) {
      repoPath = view;
    } else if (remote) {
      // The remote as it is now, at the start of every fetch and push (and whenever the relay is missing).
      repoPath = advertising || !(await relays.exists(project.project_id)) ? await relays.sync(remote, assertBranchName(project.default_branch)) : relays.path(project.project_id);
    } else {
      repoPath = managedRepoPath(reposDir, project.project_id);
      if (!(await managedRepoExists(repoPath))) {
        log.error({ project_id: project.project_id }, 'managed repository missing on disk');
        throw new DomainError('unavailable', 'Unavailable', 'The repository is not available on this server.');
      }
    }
    const proto = req.headers['git-protocol'];
    const env: Record<string, string> = {};
    if (typeof proto === 'string' && GIT_PROTOCOL.test(proto)) env.GIT_PROTOCOL = proto;
    const v2 = env.GIT_PROTOCOL?.split(':').includes('version=2') ?? false;
    const base = service === 'git-upload-pack' ? ['upload-pack', '--strict'] : await receivePackArgs(project, principal, env);
    // The view's config is the server's, without the fsck a managed repository's config sets.
    if (view && service === 'git-receive-pack') base.unshift('-c', 'receive.fsckObjects=true');
    // A relayed push: the hook pushes what it accepted to the remote before any ref moves here.
    if (remote && service === 'git-receive-pack' && !advertising) Object.assign(env, relayEnv(remote, policy));
    await runGitService(req, res, {
      args: [...base, '--stateless-rpc', ...(advertising ? ['--advertise-refs'] : []), repoPath],
      env,
      contentType: advertising ? `application/x-${service}-advertisement` : `application/x-${service}-result`,
      ...(advertising && !(v2 && service === 'git-upload-pack') ? { prefix: banner(service) } : {}),
      input: !advertising,
      maxInputBytes: service === 'git-receive-pack' ? deps.config.SVC_GIT_MAX_PUSH_BYTES : (opts.maxFetchRequestBytes ?? 64 * 1024 * 1024),
      idleTimeoutMs: opts.idleTimeoutMs ?? deps.config.SVC_GIT_IDLE_TIMEOUT_SECONDS * 1000,
      logger: log,
    });
    // A push may have moved (or created) the default branch: reading its tip tells the
    // manifest follower, so the manifest in force follows without waiting for another read.
    if (service === 'git-receive-pack' && !advertising) {
      deps.repos.for(project).readTips([project.default_branch]).catch((err: Error) => log.debug({ err: err.message }, 'default tip not read after a push'));
    }
  }

  async function receivePackArgs(project: ProjectRecord, principal: Principal, env: Record<string, string>): Promise<string[]> {
    env.SVC_DEFAULT_BRANCH = assertBranchName(project.default_branch);
    // An agent without a live session (its sandbox row gone) names no branch: the hook then refuses every ref.
    env.SVC_PUSHER = principal.grade;
    env.SVC_PUSHER_BRANCH = principal.grade === 'agent' && principal.session_id ? assertBranchName(principal.session_id) : '';
    const dir = await hooks;
    return ['-c', `core.hooksPath=${dir}`, '-c', 'receive.advertisePushOptions=false', 'receive-pack'];
  }

  /** Failed attempts count against the caller's bucket like every other credential check (429 past it). */
  async function authenticateGit(req: Request): Promise<Principal | null> {
    if (req.headers.authorization === undefined) return null; // no credential: git's first, anonymous try
    const token = tokenFrom(req.headers.authorization);
    const principal = await guard.attempt(req, () => (token ? authenticate(deps.db, token) : Promise.resolve(null)));
    if (!principal) return null;
    // A sandbox's token only through its own gateway (api/gateway.ts): anything else is unknown here.
    try {
      checkGateway(req, await credentialSandbox(deps.db, principal));
    } catch {
      return null;
    }
    return principal;
  }

  /** The API's own access rule (slug or id, within the caller's reach); anything it refuses is 404 here. */
  async function visibleProject(principal: Principal, ref: string): Promise<ProjectRecord> {
    let project: ProjectRecord;
    try {
      project = await projectForCaller(deps.db, principal, ref);
    } catch (err) {
      if (err instanceof DomainError && (err.code === 'forbidden' || err.code === 'not_found')) throw notFound('Repository');
      throw err;
    }
    if (!project.repo_managed && !project.repo_url) throw notFound('Repository');
    return project;
  }

  /**
   * The view (infra/git/local-view.ts) served for a `file://` project, null for a network
   * remote. The URL policy is applied again (SVC_ALLOW_FILE_REPOS may have been turned off).
   */
  async function localView(project: ProjectRecord): Promise<string | null> {
    const url = project.repo_url ?? '';
    if (!/^file:/i.test(url)) return null;
    await checkRepoUrl(url, policy);
    return servedLocalView(url, path.join(deps.config.dataDir, 'mirrors'), project.project_id, project.default_branch);
  }

  /** A remote project's repository, with its stored credentials (they stay in this process and its git children). */
  function locationOf(project: ProjectRecord): RepoLocation {
    const credentials = repoCredentials(deps.secrets, project);
    return { projectId: project.project_id, url: project.repo_url ?? '', ...(credentials ? { credentials } : {}) };
  }

  return r;
}

const METHOD_NOT_ALLOWED = { error: 'Method not allowed', message: 'This path does not take that method.' };

/** pkt-line `# service=<name>\n` and a flush: the v0/v1 advertisement header. */
function banner(service: Service): Buffer {
  const line = `# service=${service}\n`;
  return Buffer.from(`${(line.length + 4).toString(16).padStart(4, '0')}${line}0000`);
}
