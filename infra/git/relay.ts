import { mkdir, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { DomainError } from '../../domain/errors.js';
import { runGit } from '../../lib/git-run.js';
import { gitAuth, sendableCredentials } from './credentials.js';
import type { RepoLocation } from './port.js';
import { checkRepoUrl, type RepoUrlPolicy } from './url-policy.js';

/**
 * The push relay: sandboxes fetch and push a project with a remote repository
 * (GitHub, any git URL, a local path) through the server's smart HTTP, never the remote
 * itself, so the remote's stored credentials never enter a sandbox and every push is
 * checked by the server's pre-receive before the remote sees it.
 *
 * Each such project has a bare relay repository, `<SVC_DATA_DIR>/relay/<project id>.git`.
 * Before an advertisement (`info/refs`, the start of every fetch and push) the server
 * fetches the remote's branches and tags into it (`sync`), so a sandbox sees the remote as
 * it is. A push lands in the relay's quarantine; the pre-receive hook checks it (agents:
 * their session branch only) and then pushes the accepted commands to the remote itself,
 * with leases on the old values and the stored credentials (`relayEnv`, read by the hook).
 * Only when the remote took them do the relay's refs move: a push the remote refuses is
 * refused to the sandbox, with the remote's words.
 */
export const RELAY_URL_ENV = 'SVC_RELAY_URL';

export function relayRepoPath(relayDir: string, projectId: string): string {
  if (!/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/.test(projectId)) {
    throw new DomainError('validation', 'Validation failed', 'Invalid project id for a relay repository.');
  }
  return path.join(path.resolve(relayDir), `${projectId}.git`);
}

export function relayDirOf(config: { dataDir: string }): string {
  return path.resolve(config.dataDir, 'relay');
}

/**
 * The environment `receive-pack` passes to the hook for a relayed push: the remote's URL
 * and, when they may be sent to it, its credentials (never argv, never a config file; the
 * hook hands them to its own git through the credential helper of ./credentials.ts).
 */
export function relayEnv(location: RepoLocation, policy: Pick<RepoUrlPolicy, 'allowHttpCredentials'>): Record<string, string> {
  const env: Record<string, string> = { [RELAY_URL_ENV]: location.url };
  const s = sendableCredentials(location, { allowHttp: policy.allowHttpCredentials });
  if (s) Object.assign(env, { SVC_RELAY_USERNAME: s.username, SVC_RELAY_PASSWORD: s.password });
  return env;
}

/** The location the hook relays to, from its environment (null: not a relayed push). */
export function relayLocationFromEnv(env: NodeJS.ProcessEnv): RepoLocation | null {
  const url = env[RELAY_URL_ENV];
  if (!url) return null;
  const username = env.SVC_RELAY_USERNAME;
  const password = env.SVC_RELAY_PASSWORD;
  return { projectId: '', url, ...(username && password ? { credentials: { username, password } } : {}) };
}

/** git arguments (before the subcommand) and environment that authenticate to `location`. */
export function relayAuth(location: RepoLocation): { configArgs: string[]; env: Record<string, string>; secrets: string[] } {
  // The hook decided in the server whether credentials may go (relayEnv): send what it got.
  return gitAuth(location, { allowHttp: true });
}

export class RelayRepos {
  /** One sync at a time per relay repository (in this process); later callers share the running one. */
  private readonly inflight = new Map<string, Promise<void>>();

  constructor(
    private readonly dir: string,
    private readonly policy: RepoUrlPolicy,
    private readonly timeoutMs = 120_000,
  ) {}

  path(projectId: string): string {
    return relayRepoPath(this.dir, projectId);
  }

  /**
   * Creates the relay repository if needed and fetches the remote's branches and tags into
   * it (pruning what the remote no longer has). The URL is checked against the outbound
   * policy again at each sync. An unreachable remote: 503.
   */
  sync(location: RepoLocation, defaultBranch: string): Promise<string> {
    const repoPath = this.path(location.projectId);
    let running = this.inflight.get(repoPath);
    if (!running) {
      running = this.fetchInto(repoPath, location, defaultBranch).finally(() => this.inflight.delete(repoPath));
      this.inflight.set(repoPath, running);
    }
    return running.then(() => repoPath);
  }

  async remove(projectId: string): Promise<void> {
    await rm(this.path(projectId), { recursive: true, force: true });
  }

  /** Whether the relay repository exists (a POST may come without its advertisement). */
  async exists(projectId: string): Promise<boolean> {
    return stat(path.join(this.path(projectId), 'HEAD')).then(
      () => true,
      () => false,
    );
  }

  private async fetchInto(repoPath: string, location: RepoLocation, defaultBranch: string): Promise<void> {
    if (location.url.startsWith('-')) throw new DomainError('validation', 'Validation failed', 'The repository URL is not valid.');
    await checkRepoUrl(location.url, this.policy, { hasCredentials: location.credentials !== undefined });
    if (!(await this.exists(location.projectId))) {
      await mkdir(path.dirname(repoPath), { recursive: true });
      await runGit(['init', '-q', '--bare', '--template=', repoPath]); // no template: no hooks inside it
      await runGit(['config', 'receive.fsckObjects', 'true'], { cwd: repoPath }); // as managed repositories
    }
    // A clone checks out HEAD: the project's default branch (a validated branch name).
    await runGit(['symbolic-ref', 'HEAD', `refs/heads/${defaultBranch}`], { cwd: repoPath });
    const auth = gitAuth(location, { allowHttp: this.policy.allowHttpCredentials });
    const r = await runGit(
      [...auth.configArgs, '-c', 'http.followRedirects=false', 'fetch', '-q', '--prune', '--no-write-fetch-head', '--end-of-options', location.url, '+refs/heads/*:refs/heads/*', '+refs/tags/*:refs/tags/*'],
      { cwd: repoPath, env: auth.env, secrets: auth.secrets, okCodes: [0, 1, 128], timeoutMs: this.timeoutMs },
    );
    if (r.code !== 0) {
      throw new DomainError('unavailable', 'Repository unavailable', `The project's repository could not be fetched: ${r.stderr.trim().split('\n').pop() ?? ''}`.slice(0, 300));
    }
  }
}
