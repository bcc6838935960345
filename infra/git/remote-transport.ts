import net from 'node:net';
import { isGitCommandError, runGit, type GitRunOptions } from '../../lib/git-run.js';
import type { Logger } from '../../lib/logger.js';
import type { GitAuth } from './credentials.js';
import { repoUnavailable } from './errors.js';
import { causeOfGitFailure, repoWhere } from './repo-reach.js';
import type { MirrorState } from './mirror.js';
import { checkRepoUrl, type CheckedTarget, type RepoUrlPolicy } from './url-policy.js';

/**
 * git's network calls to one remote, run in its mirror: the URL policy checked again right
 * before each (DNS rebinding), credentials through the helper (./credentials.ts), no
 * redirect followed, and no proxy: the server connects to the repository's host itself,
 * so the policy judges the address git actually connects to (an outbound proxy would make
 * it judge the proxy). git runs without the parent's proxy variables (lib/git-run.ts) and
 * with `http.proxy` emptied, which also overrides any the mirror's config could hold.
 */
export class RemoteTransport {
  constructor(
    readonly url: string,
    private readonly o: {
      auth: GitAuth;
      mirror: MirrorState;
      policy: RepoUrlPolicy | undefined;
      hasCredentials: boolean;
      timeoutMs: number;
      log: Logger | undefined;
    },
  ) {}

  /** One `ls-remote` for `names`: branch name -> tip, for the branches that exist. */
  async lsRemoteHeads(names: string[]): Promise<Map<string, string>> {
    const r = await this.network(['ls-remote', '--end-of-options', this.url, ...names.map((n) => `refs/heads/${n}`)]);
    const wanted = new Set(names);
    const found = new Map<string, string>();
    // `<sha>\t<ref>\n` per line; ls-remote matches patterns by tail, so keep exact names only.
    for (const line of r.toString('utf8').split('\n')) {
      const tab = line.indexOf('\t');
      if (tab < 0) continue;
      const ref = line.slice(tab + 1);
      const name = ref.startsWith('refs/heads/') ? ref.slice('refs/heads/'.length) : null;
      if (name !== null && wanted.has(name)) found.set(name, line.slice(0, tab));
    }
    return found;
  }

  /** Fetches exactly these branches into the mirror's branches of the same names. */
  async fetchBranches(branches: string[]): Promise<void> {
    await this.network([
      'fetch',
      '--quiet',
      '--no-tags',
      '--no-write-fetch-head',
      '--no-auto-gc',
      '--no-recurse-submodules',
      '--end-of-options',
      this.url,
      ...[...new Set(branches)].map((b) => `+refs/heads/${b}:refs/heads/${b}`),
    ]);
  }

  /** Every branch of the remote into the mirror, pruning the ones gone. */
  async fetchAll(): Promise<void> {
    const started = performance.now();
    await this.network([
      'fetch',
      '--quiet',
      '--no-tags',
      '--prune',
      '--no-write-fetch-head',
      '--no-auto-gc',
      '--no-recurse-submodules',
      '--end-of-options',
      this.url,
      '+refs/heads/*:refs/heads/*',
    ]);
    this.o.log?.debug({ ms: performance.now() - started }, 'mirror fetched');
  }

  async network(args: string[]): Promise<Buffer> {
    try {
      return (await this.git(args)).stdout;
    } catch (e) {
      throw this.unavailable(e);
    }
  }

  /** git in the mirror with the connection's options first (credentials, policy pinning). */
  git(args: string[], extra: GitRunOptions = {}) {
    return Promise.all([this.o.mirror.ensureCreated(), this.connectArgs()]).then(([, connect]) =>
      runGit([...this.o.auth.configArgs, ...connect, ...args], {
        cwd: this.o.mirror.path,
        env: this.o.auth.env,
        secrets: this.o.auth.secrets,
        timeoutMs: this.o.timeoutMs,
        ...extra,
      }),
    );
  }

  /** A git failure as `unavailable` (logged without secrets); anything else as is. */
  unavailable(e: unknown): Error {
    if (!isGitCommandError(e)) return e instanceof Error ? e : new Error(String(e));
    this.o.log?.warn({ exit_code: e.exitCode, stderr: e.stderr }, 'remote repository unreachable');
    return repoUnavailable({ ...repoWhere(this.url), cause: causeOfGitFailure(e) }, e);
  }

  /**
   * The policy again, right before git connects; for http(s) the connection is pinned to
   * the addresses just checked (`http.curloptResolve`), so a second resolution by git
   * cannot land elsewhere. Redirects are never followed, no proxy is used.
   */
  private async connectArgs(): Promise<string[]> {
    if (!this.o.policy) return connectArgsFor(null);
    return connectArgsFor(await checkRepoUrl(this.url, this.o.policy, { hasCredentials: this.o.hasCredentials }));
  }
}

/** git's `-c` options for one connection: no redirect, no proxy, http(s) pinned to the checked addresses. */
export function connectArgsFor(t: CheckedTarget | null): string[] {
  const args = ['-c', 'http.followRedirects=false', '-c', 'http.proxy='];
  if (t && (t.protocol === 'http:' || t.protocol === 'https:') && t.port && !net.isIP(t.host) && t.addresses.length > 0) {
    const addrs = t.addresses.map((a) => (net.isIPv6(a) ? `[${a}]` : a)).join(',');
    args.push('-c', `http.curloptResolve=${t.host}:${t.port}:${addrs}`);
  }
  return args;
}
