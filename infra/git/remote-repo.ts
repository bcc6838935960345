import { pathToFileURL } from 'node:url';
import { DomainError, notFound } from '../../domain/errors.js';
import type { Logger } from '../../lib/logger.js';
import type { CommitFileRequest, DiffResult, GitEngine, MergeHooks, MergePreview, MergeRequest, MergeResult, ProjectRepo, RepoLocation } from './port.js';
import { SYSTEM_IDENTITY } from './port.js';
import { assertBranchName, assertSha } from '../../domain/refs.js';
import { gitAuth, sendableCredentials } from './credentials.js';
import { assertRemoteUrl } from './remote-url.js';
import type { RepoUrlPolicy } from './url-policy.js';
import { failpointAsync } from '../../lib/failpoints.js';
import { step } from '../../lib/step-trace.js';
import { MirrorRegistry, mirrorPathFor, processMirrors, type MirrorState } from './mirror.js';
import { headModified, refMoved } from './errors.js';
import { localRefReader, type LocalRefReader } from './local-refs.js';
import { casBranch } from './ref-cas.js';
import { exportTree, readFileAt, writeFileCommit, requireLiveTips } from './plumbing.js';
import { LsRemoteBatcher } from './ls-remote-batcher.js';
import { RemoteTransport } from './remote-transport.js';
import { MirrorCommits } from './mirror-commits.js';
import { RemotePublisher } from './remote-publish.js';

export interface OpenProjectRepoOptions {
  location: RepoLocation;
  /** Directory holding one bare mirror per project: `<mirrorsDir>/<projectId>.git` (and the views of `file://` repositories). */
  mirrorsDir: string;
  engine: GitEngine;
  logger?: Logger;
  /** Shares in-flight fetches between repos of one process; defaults to the process-wide one. */
  mirrors?: MirrorRegistry;
  /** Limit for each network git call. */
  networkTimeoutMs?: number;
  /**
   * Where repositories may live, checked again before every network call (DNS rebinding);
   * http(s) calls are pinned to the addresses that were checked. Absent: syntax checks only.
   */
  policy?: RepoUrlPolicy;
  /** false: pushes always run `git push`, never the Node push (./http-push.ts). Default true. */
  nodePush?: boolean;
}

/**
 * The `remote` backend: a git URL reached over the network (http(s), ssh, git; `file://`
 * repositories are worked on in place: ./open-repo.ts). Tips are read live on every call
 * by `ls-remote`, concurrent callers sharing a call that started after they asked
 * (`LsRemoteBatcher`). Objects come into a bare mirror only when an operation needs them
 * (./mirror-commits.ts), and the remote's branches move only by a push with lease
 * (./remote-publish.ts). A merge first tries the tips the mirror holds
 * (`mergeOnMirrorTips`): no fetch, the push's leases check that they are live.
 */
export function openRemoteRepo(opts: OpenProjectRepoOptions): ProjectRepo {
  return new RemoteProjectRepo(opts);
}

class RemoteProjectRepo implements ProjectRepo {
  private readonly mirror: MirrorState;
  /** The mirror's own branch tips, from its ref files (what its last fetch of them wrote). */
  private readonly mirrorRefs: LocalRefReader;
  private readonly engine: GitEngine;
  private readonly log: Logger | undefined;
  private readonly lsRemote: LsRemoteBatcher;
  private readonly transport: RemoteTransport;
  private readonly commits: MirrorCommits;
  private readonly publisher: RemotePublisher;

  constructor(opts: OpenProjectRepoOptions) {
    const url = assertRemoteUrl(opts.location.url);
    const allowHttp = opts.policy ? opts.policy.allowHttpCredentials : true;
    const hasCredentials = !!opts.location.credentials;
    const timeoutMs = opts.networkTimeoutMs ?? 120_000;
    this.mirror = (opts.mirrors ?? processMirrors).state(mirrorPathFor(opts.mirrorsDir, opts.location.projectId));
    this.mirrorRefs = localRefReader(pathToFileURL(this.mirror.path).href) ?? { readTips: async () => null, readTipsSync: () => null };
    this.engine = opts.engine;
    this.log = opts.logger?.child({ component: 'git-remote', project_id: opts.location.projectId });
    const common = { mirror: this.mirror, policy: opts.policy, hasCredentials, timeoutMs, log: this.log };
    this.transport = new RemoteTransport(url, { ...common, auth: gitAuth(opts.location, { allowHttp }) });
    this.publisher = new RemotePublisher(this.transport, { ...common, credentials: sendableCredentials(opts.location, { allowHttp }), nodePush: opts.nodePush ?? true });
    this.commits = new MirrorCommits(this.mirror, () => this.transport.fetchAll());
    this.lsRemote = new LsRemoteBatcher((names) => this.transport.lsRemoteHeads(names));
  }

  async readTips(branches: string[]): Promise<Record<string, string | null>> {
    const names = [...new Set(branches.map((b) => assertBranchName(b)))];
    const tips: Record<string, string | null> = Object.fromEntries(names.map((n) => [n, null]));
    if (names.length === 0) return tips;
    const found = await this.lsRemote.read(names);
    for (const n of names) tips[n] = found.get(n) ?? null;
    return tips;
  }

  async diffBranches(baseRef: string, headRef: string): Promise<DiffResult> {
    const { base, head } = await this.liveTips(baseRef, headRef);
    return this.commits.withCommits([base, head], () => refMoved(`refs/heads/${baseRef}`), () => this.engine.diff(this.mirror.path, base, head));
  }

  async diffCommits(baseSha: string, headSha: string): Promise<DiffResult> {
    assertSha(baseSha, 'base_sha');
    assertSha(headSha, 'head_sha');
    return this.commits.withCommits([baseSha, headSha], () => notFound('Commit'), () => this.engine.diff(this.mirror.path, baseSha, headSha));
  }

  async preview(baseRef: string, headRef: string): Promise<MergePreview> {
    const { base, head } = await this.liveTips(baseRef, headRef);
    return this.commits.withCommits([base, head], () => refMoved(`refs/heads/${baseRef}`), () => this.engine.preview(this.mirror.path, base, head));
  }

  async branchContains(branch: string, sha: string): Promise<boolean> {
    assertSha(sha);
    const tip = (await this.readTips([assertBranchName(branch)]))[branch] ?? null;
    if (tip === null) return false;
    if (tip === sha) return true;
    try {
      await this.commits.ensure([tip, sha], () => notFound('Commit'));
    } catch (err) {
      if (err instanceof DomainError && err.code === 'not_found') return false;
      throw err;
    }
    return this.engine.isAncestor(this.mirror.path, sha, tip);
  }

  async merge(req: MergeRequest, hooks: MergeHooks = {}): Promise<MergeResult> {
    const baseRef = assertBranchName(req.base_ref, 'base_ref');
    const headRef = assertBranchName(req.head_ref, 'head_ref');
    if (req.expected_head_sha !== undefined) assertSha(req.expected_head_sha, 'expected_head_sha');
    if (performance.now() >= this.publisher.presumeTipsAfter) {
      const merged = await this.mergeOnMirrorTips(baseRef, headRef, req, hooks);
      if (merged) return merged;
    }
    // One fetch of both branches brings their tips and whatever commits the mirror lacks
    // (instead of an ls-remote, then a fetch).
    const { base, head } = await this.fetchTips(baseRef, headRef);
    step('git: read tips');
    if (req.expected_head_sha !== undefined && req.expected_head_sha !== head) {
      throw headModified(req.expected_head_sha, head);
    }
    if (req.expected_base_sha !== undefined && req.expected_base_sha !== base) throw refMoved(`refs/heads/${baseRef}`);
    const result = await this.engine.createMerge(this.mirror.path, {
      base_sha: base,
      head_sha: head,
      message: req.message,
      author: SYSTEM_IDENTITY,
    });
    await hooks.beforePublish?.(result);
    if (result.kind !== 'up-to-date') {
      // The merge commit was made in the mirror: it already holds the new base tip.
      await this.publisher.pushWithLease(baseRef, result.merge_commit_sha, base, [base, head]);
      this.notePublished(baseRef, result.merge_commit_sha, base);
      step('git: push');
    }
    this.log?.info({ base_ref: baseRef, head_ref: headRef, kind: result.kind, sha: result.merge_commit_sha }, 'merged');
    return result;
  }

  /**
   * A merge with no fetch, when the mirror already holds both tips (its branch refs, as its
   * last fetch or our last push left them; the head may also be the expected head if the
   * mirror has that commit): they are presumed live, the merge is made on them, and one
   * atomic push publishes it with leases on both branches (base: the ref moved; head: must
   * still be at the head merged, checked by the pushing git against the server's refs).
   * Null when that cannot be decided here: the presumed tips were stale (the push refused,
   * nothing moved: `notPublished` is told), the result on them is not one to publish (up
   * to date, a conflict, an error: decided again on live tips), or the mirror lacks a tip.
   * The caller then takes the long way (fetch, merge, push) with its errors, and
   * `beforePublish` sees its result.
   */
  private async mergeOnMirrorTips(baseRef: string, headRef: string, req: MergeRequest, hooks: MergeHooks): Promise<MergeResult | null> {
    const tips = await this.mirrorRefs.readTips([baseRef, headRef]);
    const base = tips?.[baseRef] ?? null;
    let head = tips?.[headRef] ?? null;
    if (base === null) return null;
    if (req.expected_base_sha !== undefined && base !== req.expected_base_sha) return null; // the live tips decide
    if (req.expected_head_sha !== undefined && head !== req.expected_head_sha) {
      // The head as the caller last saw it: presumed live if the mirror has the commit.
      if (!this.commits.has(req.expected_head_sha) && !(await this.commits.present([req.expected_head_sha]))) return null;
      head = req.expected_head_sha;
    }
    if (head === null) return null;
    step('git: presumed tips');
    let result: MergeResult;
    try {
      result = await this.engine.createMerge(this.mirror.path, { base_sha: base, head_sha: head, message: req.message, author: SYSTEM_IDENTITY });
    } catch {
      return null; // a conflict or a failure on tips that may be stale: the live tips decide
    }
    if (result.kind === 'up-to-date') return null; // nothing to push, so no lease would check the tips
    await hooks.beforePublish?.(result);
    const pushed = await this.publisher.pushAtomicWithLeases(baseRef, headRef, result.merge_commit_sha, base, head);
    step('git: push');
    if (pushed === 'stale') await hooks.notPublished?.(result);
    if (pushed !== 'pushed') return null;
    this.notePublished(baseRef, result.merge_commit_sha, base);
    // Tests: the remote moved, and then the answer is lost on its way back.
    await failpointAsync('git.push.after-remote-moved');
    this.log?.info({ base_ref: baseRef, head_ref: headRef, kind: result.kind, sha: result.merge_commit_sha, presumed_tips: true }, 'merged');
    return result;
  }

  /**
   * The mirror's base branch follows our push (from `old`, what its last fetch wrote), so
   * the next merge presumes the base as it now is. Best effort, a cache: when the ref is
   * elsewhere or locked (a fetch running) it is left alone; a wrong presumption costs a
   * refused lease, never a wrong merge.
   */
  private notePublished(branch: string, next: string, old: string): void {
    try {
      casBranch(this.mirrorRefs, this.mirror.path, branch, next, old, { message: 'svc: pushed' });
    } catch (err) {
      this.log?.debug({ err: (err as Error).message }, 'mirror ref not advanced after the push');
    }
  }

  async createBranch(branch: string, fromRef: string): Promise<string> {
    assertBranchName(branch, 'branch');
    assertBranchName(fromRef, 'base_ref');
    const tips = await this.readTips([fromRef, branch]);
    const from = tips[fromRef] ?? null;
    if (from === null) throw notFound(`Branch '${fromRef}'`);
    if (tips[branch] !== null) {
      throw new DomainError('conflict', 'Conflict', `Branch '${branch}' already exists.`);
    }
    await this.commits.ensure([from], () => refMoved(`refs/heads/${fromRef}`));
    await this.publisher.pushWithLease(branch, from, null);
    return from;
  }

  async readFileAt(sha: string, path: string): Promise<Buffer | null> {
    await this.commits.ensure([assertSha(sha)], () => notFound('Commit'));
    return readFileAt(this.mirror.path, sha, path);
  }

  async commitFileOnNewBranch(req: CommitFileRequest): Promise<string> {
    assertBranchName(req.branch, 'branch');
    await this.commits.ensure([assertSha(req.fromSha)], () => notFound('Commit'));
    const sha = await writeFileCommit(this.mirror.path, req);
    await this.publisher.pushWithLease(req.branch, sha, null);
    return sha;
  }

  async computeMerge(baseSha: string, headSha: string, message: string): Promise<MergeResult> {
    await this.commits.ensure([assertSha(baseSha), assertSha(headSha)], () => notFound('Commit'));
    return this.engine.createMerge(this.mirror.path, { base_sha: baseSha, head_sha: headSha, message, author: SYSTEM_IDENTITY });
  }

  /** A push with lease of a commit the mirror holds (made there by `computeMerge`); the mirror's ref follows. */
  async moveBranch(branch: string, next: string, expectedOld: string): Promise<void> {
    assertBranchName(branch, 'branch');
    assertSha(next, 'next');
    assertSha(expectedOld, 'expected_old');
    await this.publisher.pushWithLease(branch, next, expectedOld, [expectedOld]);
    this.notePublished(branch, next, expectedOld);
  }

  async exportTree(sha: string, dest: string): Promise<void> {
    await this.commits.ensure([assertSha(sha)], () => notFound('Commit'));
    await exportTree(this.mirror.path, sha, dest);
  }

  /**
   * Live tips of two branches with their commits in the mirror, in one `git fetch` of just
   * those refs (the fetch reads the remote's refs as it starts, so the tips are as fresh
   * as an ls-remote's); read back from the mirror's ref files. If that fetch fails (a
   * missing branch, a fetch of the same mirror holding a ref lock), the long way: ls-remote
   * for the tips (its errors are the right ones), then the commits.
   */
  private async fetchTips(baseRef: string, headRef: string): Promise<{ base: string; head: string }> {
    assertBranchName(baseRef, 'base_ref');
    assertBranchName(headRef, 'head_ref');
    const fetched = await this.fetchBoth(baseRef, headRef);
    if (fetched) return fetched;
    const { base, head } = await this.liveTips(baseRef, headRef);
    await this.commits.ensure([base, head], () => refMoved(`refs/heads/${baseRef}`));
    return { base, head };
  }

  private async fetchBoth(baseRef: string, headRef: string): Promise<{ base: string; head: string } | null> {
    try {
      await this.transport.fetchBranches([baseRef, headRef]);
    } catch (err) {
      this.log?.debug({ err: (err as Error).message }, 'fetch of both branches failed; reading tips with ls-remote');
      return null;
    }
    const tips = (await this.mirrorRefs.readTips([baseRef, headRef])) ?? {};
    const base = tips[baseRef] ?? null;
    const head = tips[headRef] ?? null;
    // A fetch that succeeded holds every commit of the refs it wrote (a concurrent fetch of
    // the mirror may have written newer tips since: as live, and as complete).
    if (base === null || head === null) return null;
    this.commits.remember([base, head]);
    return { base, head };
  }

  private liveTips(baseRef: string, headRef: string): Promise<{ base: string; head: string }> {
    return requireLiveTips((b) => this.readTips(b), baseRef, headRef);
  }
}
