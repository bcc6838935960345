/**
 * Smart HTTP's workflow (docs/git-http.md): which repository a request reaches, with which
 * credentials, hooks and environment. A managed repository is served as is; a `file://`
 * one through the server's view of it (its objects and refs, the server's config and
 * hooks: a push moves the repository's refs, none of its hooks run); a project with a
 * network remote through its relay (infra/git/relay.ts: fetched from the remote before
 * each advertisement, pushes relayed to the remote with the stored credentials, which
 * never leave the server). The route (api/routes/git-http.ts) parses the request,
 * authenticates the caller, asks `open` for the git run and streams it.
 */
import path from 'node:path';
import type { Config } from '../../infra/config.js';
import type { Executor } from '../../infra/db/db.js';
import type { Logger } from '../../lib/logger.js';
import type { SecretBox } from '../../infra/secret-box.js';
import type { ProjectRepos } from '../../infra/git/project-repos.js';
import { DomainError, notFound } from '../../domain/errors.js';
import { assertBranchName } from '../../domain/refs.js';
import type { ProjectRecord } from '../../domain/project.js';
import { managedRepoExists, managedRepoPath, reposDirOf } from '../../infra/git/managed-repo.js';
import { installHooks } from '../../infra/git/pre-receive.js';
import { RelayRepos, relayDirOf, relayEnv } from '../../infra/git/relay.js';
import { checkRepoUrl, repoUrlPolicy } from '../../infra/git/url-policy.js';
import { servedLocalView } from '../../infra/git/open-repo.js';
import type { RepoLocation } from '../../infra/git/port.js';
import { repoCredentials } from '../../infra/git/credentials.js';
import { projectForCaller } from '../projects/access.js';
import type { Principal } from '../tokens/service.js';

export const GIT_SERVICES = ['git-upload-pack', 'git-receive-pack'] as const;
export type GitService = (typeof GIT_SERVICES)[number];

/** `version=2`, or `key=value` items joined by `:` (git's own format); nothing else reaches git. */
const GIT_PROTOCOL = /^[A-Za-z0-9._-]{1,32}(=[A-Za-z0-9._-]{0,64})?(:[A-Za-z0-9._-]{1,32}(=[A-Za-z0-9._-]{0,64})?){0,7}$/;
/** Largest upload-pack request (negotiation), after decompression. */
const MAX_FETCH_REQUEST_BYTES = 64 * 1024 * 1024;

export interface GitHostingDeps {
  config: Config;
  db: Executor;
  secrets: SecretBox;
  repos: ProjectRepos;
  logger: Logger;
}

/** One smart-HTTP request, as the route parsed it. */
export interface GitRequest {
  /** The project's slug or id, as the path names it. */
  ref: string;
  service: GitService;
  /** `info/refs` (the advertisement) rather than the POST of the service itself. */
  advertising: boolean;
  /** The `Git-Protocol` header, if any (dropped unless it is git's own format). */
  gitProtocol: string | undefined;
  /** Who asks, authenticated by the route. */
  principal: Principal;
}

/** The git run that answers a request: every argument is ours. */
export interface GitRun {
  /** git argv (after `git`). */
  args: string[];
  env: Record<string, string>;
  contentType: string;
  /** Bytes written before git's output (the v0 `# service=` banner). */
  prefix?: Buffer;
  /** Whether the request body goes to git (POST) or git gets no input (info/refs). */
  input: boolean;
  maxInputBytes: number;
  idleTimeoutMs: number;
  /** Called once git's answer has been streamed. */
  streamed(): void;
}

export interface GitHosting {
  /** The git run for one request: 404 for a project the caller cannot see, 503 when its repository is not available. */
  open(request: GitRequest): Promise<GitRun>;
}

/** Smart HTTP over every project of this server; the hooks are installed once, here. */
export function gitHosting(deps: GitHostingDeps): GitHosting {
  const { config } = deps;
  const log = deps.logger.child({ component: 'git-http' });
  const reposDir = reposDirOf(config);
  const hooks = installHooks(path.join(config.dataDir, 'git-hooks'));
  hooks.catch((err: unknown) => deps.logger.error({ err: (err as Error).message }, 'could not install the git hooks'));
  const policy = repoUrlPolicy(config);
  const relays = new RelayRepos(relayDirOf(config), policy);

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
    return servedLocalView(url, path.join(config.dataDir, 'mirrors'), project.project_id, project.default_branch);
  }

  /** A remote project's repository, with its stored credentials (they stay in this process and its git children). */
  function locationOf(project: ProjectRecord): RepoLocation {
    const credentials = repoCredentials(deps.secrets, project);
    return { projectId: project.project_id, url: project.repo_url ?? '', ...(credentials ? { credentials } : {}) };
  }

  async function receivePackArgs(project: ProjectRecord, principal: Principal, env: Record<string, string>): Promise<string[]> {
    env.SVC_DEFAULT_BRANCH = assertBranchName(project.default_branch);
    // An agent without a live session (its sandbox row gone) names no branch: the hook then refuses every ref.
    env.SVC_PUSHER = principal.grade;
    env.SVC_PUSHER_BRANCH = principal.grade === 'agent' && principal.session_id ? assertBranchName(principal.session_id) : '';
    const dir = await hooks;
    return ['-c', `core.hooksPath=${dir}`, '-c', 'receive.advertisePushOptions=false', 'receive-pack'];
  }

  return {
    async open({ ref, service, advertising, gitProtocol, principal }) {
      const project = await visibleProject(principal, ref);
      // Every member may write; the hook still guards the default branch and session branches.
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
      const env: Record<string, string> = {};
      if (typeof gitProtocol === 'string' && GIT_PROTOCOL.test(gitProtocol)) env.GIT_PROTOCOL = gitProtocol;
      const v2 = env.GIT_PROTOCOL?.split(':').includes('version=2') ?? false;
      const pushing = service === 'git-receive-pack';
      const base = pushing ? await receivePackArgs(project, principal, env) : ['upload-pack', '--strict'];
      // The view's config is the server's, without the fsck a managed repository's config sets.
      if (view && pushing) base.unshift('-c', 'receive.fsckObjects=true');
      // A relayed push: the hook pushes what it accepted to the remote before any ref moves here.
      if (remote && pushing && !advertising) Object.assign(env, relayEnv(remote, policy));
      return {
        args: [...base, '--stateless-rpc', ...(advertising ? ['--advertise-refs'] : []), repoPath],
        env,
        contentType: advertising ? `application/x-${service}-advertisement` : `application/x-${service}-result`,
        ...(advertising && !(v2 && service === 'git-upload-pack') ? { prefix: banner(service) } : {}),
        input: !advertising,
        maxInputBytes: pushing ? config.SVC_GIT_MAX_PUSH_BYTES : MAX_FETCH_REQUEST_BYTES,
        idleTimeoutMs: config.SVC_GIT_IDLE_TIMEOUT_SECONDS * 1000,
        streamed() {
          // A push may have moved (or created) the default branch: reading its tip tells the
          // manifest follower, so the manifest in force follows without waiting for another read.
          if (!pushing || advertising) return;
          deps.repos.for(project).readTips([project.default_branch]).catch((err: Error) => log.debug({ err: err.message }, 'default tip not read after a push'));
        },
      };
    },
  };
}

/** pkt-line `# service=<name>\n` and a flush: the v0/v1 advertisement header. */
function banner(service: GitService): Buffer {
  const line = `# service=${service}\n`;
  return Buffer.from(`${(line.length + 4).toString(16).padStart(4, '0')}${line}0000`);
}
