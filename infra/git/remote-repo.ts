import net from 'node:net';
import { pathToFileURL } from 'node:url';
import { DomainError, isDomainError, notFound } from '../../domain/errors.js';
import type { Logger } from '../../lib/logger.js';
import type {
  CommitFileRequest,
  DiffResult,
  GitEngine,
  MergeHooks,
  MergePreview,
  MergeRequest,
  MergeResult,
  ProjectRepo,
  RepoLocation,
} from './port.js';
import { SYSTEM_IDENTITY } from './port.js';
import { assertBranchName, assertSha } from '../../domain/refs.js';
import { runGit, type GitRunOptions } from '../../lib/git-run.js';
import { gitAuth, sendableCredentials, type GitAuth } from './credentials.js';
import { httpPush, nodePushApplies, type HttpPushOutcome } from './http-push.js';
import { assertRemoteUrl } from './remote-url.js';
import { checkRepoUrl, type RepoUrlPolicy } from './url-policy.js';
import { failpointAsync } from '../../lib/failpoints.js';
import { step } from '../../lib/step-trace.js';
import { MirrorRegistry, mirrorPathFor, processMirrors, type MirrorState } from './mirror.js';
import { GitCommandError, isGitCommandError } from '../../lib/git-run.js';
import { headModified, refMoved, repoUnavailable } from './errors.js';
import { localRefReader, type LocalRefReader } from './local-refs.js';
import { casBranch } from './ref-cas.js';
import { exportTree, readFileAt, writeFileCommit } from './plumbing.js';
import { atomicPushOutcome, porcelainRef, remoteRejectedReason, type AtomicPushOutcome } from './push-porcelain.js';
import { LsRemoteBatcher } from './ls-remote-batcher.js';
import { localDirOf, publishableInPlace } from './in-place.js';

export interface OpenProjectRepoOptions {
  location: RepoLocation;
  /** Directory holding one bare mirror per project: `<mirrorsDir>/<projectId>.git`. */
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
}

/**
 * The `remote` backend: any git URL. Tips are read live on every call: from the ref files
 * of a local bare repository (`file://`, see ./local-refs.ts), otherwise by `ls-remote`,
 * concurrent callers sharing a call that started after they asked (`LsRemoteBatcher`).
 * Objects come into a bare mirror only when an operation needs them, and the remote's
 * base branch moves only by a push with lease. A merge first tries the tips the mirror
 * holds (`mergeOnMirrorTips`): no fetch, the push's leases check that they are live.
 */
export function openProjectRepo(opts: OpenProjectRepoOptions): ProjectRepo {
  return new RemoteProjectRepo(opts);
}

class RemoteProjectRepo implements ProjectRepo {
  private readonly url: string;
  private readonly auth: GitAuth;
  private readonly mirror: MirrorState;
  /** The mirror's own branch tips, from its ref files (what its last fetch of them wrote). */
  private readonly mirrorRefs: LocalRefReader;
  private readonly engine: GitEngine;
  private readonly log: Logger | undefined;
  private readonly timeoutMs: number;
  private readonly localRefs: LocalRefReader | null;
  private readonly lsRemote: LsRemoteBatcher;
  private readonly policy: RepoUrlPolicy | undefined;
  private readonly hasCredentials: boolean;
  /** What the Node push sends as Basic auth (the same rule as git's helper). */
  private readonly credentials: { username: string; password: string } | null;
  /** The repository's directory when it is a local (file://) one. */
  private readonly localDir: string | null;

  constructor(opts: OpenProjectRepoOptions) {
    this.url = assertRemoteUrl(opts.location.url);
    this.localRefs = opts.location.credentials ? null : localRefReader(this.url);
    this.lsRemote = new LsRemoteBatcher((names) => this.lsRemoteHeads(names));
    this.policy = opts.policy;
    this.localDir = this.localRefs ? localDirOf(this.url) : null;
    this.hasCredentials = !!opts.location.credentials;
    const allowHttp = opts.policy ? opts.policy.allowHttpCredentials : true;
    this.auth = gitAuth(opts.location, { allowHttp });
    this.credentials = sendableCredentials(opts.location, { allowHttp });
    this.mirror = (opts.mirrors ?? processMirrors).state(mirrorPathFor(opts.mirrorsDir, opts.location.projectId));
    this.mirrorRefs = localRefReader(pathToFileURL(this.mirror.path).href) ?? { readTips: async () => null, readTipsSync: () => null };
    this.engine = opts.engine;
    this.log = opts.logger?.child({ component: 'git-remote', project_id: opts.location.projectId });
    this.timeoutMs = opts.networkTimeoutMs ?? 120_000;
  }

  async readTips(branches: string[]): Promise<Record<string, string | null>> {
    const names = [...new Set(branches.map((b) => assertBranchName(b)))];
    const tips: Record<string, string | null> = Object.fromEntries(names.map((n) => [n, null]));
    if (names.length === 0) return tips;
    if (this.localRefs && this.policy) await checkRepoUrl(this.url, this.policy);
    const local = this.localRefs ? await this.localRefs.readTips(names) : null;
    if (local) return local;
    const found = await this.lsRemote.read(names);
    for (const n of names) tips[n] = found.get(n) ?? null;
    return tips;
  }

  /** One `ls-remote` for `names`: branch name -> tip, for the branches that exist. */
  private async lsRemoteHeads(names: string[]): Promise<Map<string, string>> {
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

  async diffBranches(baseRef: string, headRef: string): Promise<DiffResult> {
    const { base, head } = await this.liveTips(baseRef, headRef);
    return this.withCommits([base, head], () => refMoved(`refs/heads/${baseRef}`), () => this.engine.diff(this.mirror.path, base, head));
  }

  async diffCommits(baseSha: string, headSha: string): Promise<DiffResult> {
    assertSha(baseSha, 'base_sha');
    assertSha(headSha, 'head_sha');
    return this.withCommits([baseSha, headSha], () => notFound('Commit'), () => this.engine.diff(this.mirror.path, baseSha, headSha));
  }

  async preview(baseRef: string, headRef: string): Promise<MergePreview> {
    const { base, head } = await this.liveTips(baseRef, headRef);
    return this.withCommits([base, head], () => refMoved(`refs/heads/${baseRef}`), () => this.engine.preview(this.mirror.path, base, head));
  }

  async branchContains(branch: string, sha: string): Promise<boolean> {
    assertSha(sha);
    const tip = (await this.readTips([assertBranchName(branch)]))[branch] ?? null;
    if (tip === null) return false;
    if (tip === sha) return true;
    try {
      await this.ensureCommits([tip, sha], () => notFound('Commit'));
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
    const direct = this.localDir !== null && publishableInPlace(this.localDir);
    step('git: hooks check');
    if (!direct && this.localRefs === null && Date.now() >= this.presumeTipsAfter) {
      const merged = await this.mergeOnMirrorTips(baseRef, headRef, req, hooks);
      if (merged) return merged;
    }
    // In place: tips from the repository's ref files. A remote over the network: one fetch
    // of both branches brings their tips and whatever commits the mirror lacks (instead of
    // an ls-remote, then a fetch).
    const { base, head } = direct ? await this.liveTips(baseRef, headRef) : await this.fetchTips(baseRef, headRef);
    step('git: read tips');
    if (req.expected_head_sha !== undefined && req.expected_head_sha !== head) {
      throw headModified(req.expected_head_sha, head);
    }
    if (direct) {
      // A local bare repository without receive hooks: the merge is computed in it and
      // published by a compare-and-swap of the ref (no fetch, no push). With hooks, the
      // push below lets them decide.
      if (this.policy) await checkRepoUrl(this.url, this.policy);
      const result = await this.engine.createMerge(this.localDir!, {
        base_sha: base,
        head_sha: head,
        message: req.message,
        author: SYSTEM_IDENTITY,
      });
      await hooks.beforePublish?.(result);
      if (result.kind !== 'up-to-date') await this.updateRefInPlace(this.localDir!, baseRef, result.merge_commit_sha, base);
      step('git: update-ref');
      this.log?.info({ base_ref: baseRef, head_ref: headRef, kind: result.kind, sha: result.merge_commit_sha, in_place: true }, 'merged');
      return result;
    }
    const result = await this.engine.createMerge(this.mirror.path, {
      base_sha: base,
      head_sha: head,
      message: req.message,
      author: SYSTEM_IDENTITY,
    });
    await hooks.beforePublish?.(result);
    if (result.kind !== 'up-to-date') {
      // The merge commit was made in the mirror: it already holds the new base tip.
      await this.pushWithLease(baseRef, result.merge_commit_sha, base, [base, head]);
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
    if (req.expected_head_sha !== undefined && head !== req.expected_head_sha) {
      // The head as the caller last saw it: presumed live if the mirror has the commit.
      if (!this.inMirror.has(req.expected_head_sha) && !(await this.hasCommits([req.expected_head_sha]))) return null;
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
    const pushed = await this.pushAtomicWithLeases(baseRef, headRef, result.merge_commit_sha, base, head);
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

  /** Until when merges skip `mergeOnMirrorTips` (after a push whose outcome git did not report, e.g. a server without atomic pushes). */
  private presumeTipsAfter = 0;

  /**
   * `git push --atomic` moving base from `base` to `next` and "pushing" head at `head`
   * (already there: a lease only), both leased, the leases checked by the pushing git
   * against the refs the server advertises and the base's old value again by the server.
   * - `pushed`: published;
   * - `stale`: a lease did not hold; refused before anything was sent, nothing moved;
   * - `unsure`: git reported no outcome (a server that refuses atomic pushes, a lost
   *   connection) and the base, read afterwards, is not at `next`: not published so far.
   *   Merges skip this way for a while, and the caller's record stays (a lost connection
   *   may still land the update: the long way's lease then refuses to overwrite it).
   * Throws what `pushWithLease` throws for a server's refusal, and `unavailable` when the
   * outcome cannot be known (the push was killed by its timeout, the base cannot be read).
   */
  private async pushAtomicWithLeases(baseRef: string, headRef: string, next: string, base: string, head: string): Promise<'pushed' | 'stale' | 'unsure'> {
    const refs = [`refs/heads/${baseRef}`, `refs/heads/${headRef}`];
    const node = await this.nodePush({ ref: refs[0]!, next }, [{ ref: refs[0]!, expected: base }, { ref: refs[1]!, expected: head }], [base, head]);
    if (node?.kind === 'denied') throw this.pushFailed(`HTTP ${node.status}`);
    const outcome = node ?? (await this.gitAtomicPush(refs, next, base, head));
    if (outcome.kind === 'pushed' || outcome.kind === 'stale') return outcome.kind;
    if (outcome.kind === 'rejected') throw pushRejected(baseRef, outcome.reason);
    // No outcome reported (a server that refuses atomic pushes, a connection lost): the
    // base itself says whether the update happened.
    const live = (await this.lsRemoteHeads([baseRef])).get(baseRef) ?? null;
    if (live === next) return 'pushed';
    this.presumeTipsAfter = Date.now() + 10 * 60_000;
    this.log?.warn({ base_ref: baseRef }, 'atomic push gave no outcome and did not publish; merging the long way for a while');
    return 'unsure';
  }

  /** `git push --atomic --porcelain` with both leases; its outcome from the exit code and porcelain lines. */
  private async gitAtomicPush(refs: string[], next: string, base: string, head: string): Promise<AtomicPushOutcome> {
    let code: number | null = null;
    let out: Buffer = Buffer.alloc(0);
    try {
      const r = await this.git(
        [
          'push',
          '--atomic',
          '--porcelain',
          '--no-verify',
          '--no-recurse-submodules',
          `--force-with-lease=${refs[0]}:${base}`,
          `--force-with-lease=${refs[1]}:${head}`,
          '--end-of-options',
          this.url,
          `${next}:${refs[0]}`,
          `${head}:${refs[1]}`,
        ],
        { okCodes: [0, 1] },
      );
      code = r.code;
      out = r.stdout;
    } catch (e) {
      if (!isGitCommandError(e) || e.signal !== null) throw this.unavailable(e);
    }
    return code === null ? { kind: 'unknown' } : atomicPushOutcome(code, out, refs);
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
    await this.ensureCommits([from], () => refMoved(`refs/heads/${fromRef}`));
    await this.pushWithLease(branch, from, null);
    return from;
  }

  async readFileAt(sha: string, path: string): Promise<Buffer | null> {
    await this.ensureCommits([assertSha(sha)], () => notFound('Commit'));
    return readFileAt(this.mirror.path, sha, path);
  }

  async commitFileOnNewBranch(req: CommitFileRequest): Promise<string> {
    assertBranchName(req.branch, 'branch');
    await this.ensureCommits([assertSha(req.fromSha)], () => notFound('Commit'));
    const sha = await writeFileCommit(this.mirror.path, req);
    await this.pushWithLease(req.branch, sha, null);
    return sha;
  }

  async exportTree(sha: string, dest: string): Promise<void> {
    await this.ensureCommits([assertSha(sha)], () => notFound('Commit'));
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
    // A repository on this machine: its ref files answer for free, and the mirror often
    // holds the commits already (one cat-file, no fetch): the long way is the short one.
    const fetched = this.localRefs ? null : await this.fetchBoth(baseRef, headRef);
    if (fetched) return fetched;
    const { base, head } = await this.liveTips(baseRef, headRef);
    await this.ensureCommits([base, head], () => refMoved(`refs/heads/${baseRef}`));
    return { base, head };
  }

  private async fetchBoth(baseRef: string, headRef: string): Promise<{ base: string; head: string } | null> {
    try {
      await this.network([
        'fetch',
        '--quiet',
        '--no-tags',
        '--no-write-fetch-head',
        '--no-auto-gc',
        '--no-recurse-submodules',
        '--end-of-options',
        this.url,
        ...[...new Set([baseRef, headRef])].map((b) => `+refs/heads/${b}:refs/heads/${b}`),
      ]);
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
    this.remember([base, head]);
    return { base, head };
  }

  private async liveTips(baseRef: string, headRef: string): Promise<{ base: string; head: string }> {
    assertBranchName(baseRef, 'base_ref');
    assertBranchName(headRef, 'head_ref');
    const tips = await this.readTips([baseRef, headRef]);
    const base = tips[baseRef] ?? null;
    const head = tips[headRef] ?? null;
    if (base === null) throw notFound(`Branch '${baseRef}'`);
    if (head === null) throw notFound(`Branch '${headRef}'`);
    return { base, head };
  }

  /**
   * Makes the commits available in the mirror: no fetch when they are there already
   * (commits are immutable, and tips are always read live, so a mirror holding them can
   * serve any answer about them); otherwise join the fetch in flight or start one. A
   * joined fetch may predate the tips we read, hence a second round.
   */
  /**
   * A read (diff, preview) on commits that must be in the mirror. Commits seen there stay
   * (no gc; refs are only pruned), so tips already checked are not checked again and a
   * repeated read costs no git process for it. The mirror is a cache that may be deleted:
   * if the read fails on commits taken as known, they are checked (and fetched) again and
   * the read is retried once.
   */
  private async withCommits<T>(shas: string[], missing: () => Error, read: () => Promise<T>): Promise<T> {
    if (shas.every((sha) => this.inMirror.has(sha))) {
      try {
        return await read();
      } catch (err) {
        if (err instanceof DomainError) throw err; // an answer about the commits, not a missing object
        for (const sha of shas) this.inMirror.delete(sha);
        this.mirror.recheck();
      }
    }
    await this.ensureCommits(shas, missing);
    return read();
  }

  private async ensureCommits(shas: string[], missing: () => Error): Promise<void> {
    await this.mirror.ensureCreated();
    for (let round = 0; round < 2; round++) {
      if (await this.hasCommits(shas)) return this.remember(shas);
      try {
        await this.mirror.fetch(() => this.fetchAll());
      } catch (err) {
        // Another process (a second worker, the API) may be fetching into the same mirror
        // and holding its ref locks: look again after a moment, then fetch once more.
        if (round === 1 || !isDomainError(err) || err.code !== 'unavailable') throw err;
        await new Promise((r) => setTimeout(r, 50 + Math.random() * 150));
      }
    }
    if (!(await this.hasCommits(shas))) throw missing();
    this.remember(shas);
  }

  /** Commits known to be in the mirror, oldest first (bounded). */
  private readonly inMirror = new Set<string>();
  private remember(shas: string[]): void {
    for (const sha of shas) {
      this.inMirror.delete(sha);
      this.inMirror.add(sha);
    }
    while (this.inMirror.size > 4096) this.inMirror.delete(this.inMirror.values().next().value!);
  }

  /** One `cat-file --batch-check` for all of them (machine output: `<sha> commit <size>`). */
  private async hasCommits(shas: string[]): Promise<boolean> {
    const r = await runGit(['cat-file', '--batch-check=%(objectname) %(objecttype)'], {
      cwd: this.mirror.path,
      input: shas.map((sha) => `${assertSha(sha)}^{commit}\n`).join(''),
    });
    const lines = r.stdout.toString('utf8').split('\n').filter(Boolean);
    return lines.length === shas.length && lines.every((l) => l.endsWith(' commit'));
  }


  private async fetchAll(): Promise<void> {
    const started = Date.now();
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
    this.log?.debug({ ms: Date.now() - started }, 'mirror fetched');
  }

  /**
   * Moves `refs/heads/<branch>` on the remote from `expectedOld` (null: must not exist)
   * to `next`. The outcome comes from the exit code and the porcelain status flag.
   */
  private async pushWithLease(branch: string, next: string, expectedOld: string | null, haves?: string[]): Promise<void> {
    const ref = `refs/heads/${branch}`;
    const node = expectedOld !== null && haves ? await this.nodePush({ ref, next }, [{ ref, expected: expectedOld }], haves) : null;
    if (node?.kind === 'pushed') {
      await failpointAsync('git.push.after-remote-moved');
      return;
    }
    if (node?.kind === 'rejected') throw pushRejected(branch, node.reason);
    if (node?.kind === 'stale') throw refMoved(ref);
    if (node) throw this.pushFailed(node.kind === 'denied' ? `HTTP ${node.status}` : node.why);
    let out: Buffer;
    let code: number;
    try {
      const r = await this.git(
        [
          'push',
          '--porcelain',
          '--no-verify',
          '--no-recurse-submodules',
          `--force-with-lease=${ref}:${expectedOld ?? ''}`,
          '--end-of-options',
          this.url,
          `${next}:${ref}`,
        ],
        { okCodes: [0, 1] },
      );
      out = r.stdout;
      code = r.code;
    } catch (e) {
      throw this.unavailable(e);
    }
    const result = porcelainRef(out, ref);
    if (code === 0 && result !== null && result.flag !== '!') {
      // Tests: the remote moved, and then the answer is lost on its way back.
      await failpointAsync('git.push.after-remote-moved');
      return;
    }
    const reason = remoteRejectedReason(result);
    if (reason !== null) throw pushRejected(branch, reason);
    if (result?.flag === '!') throw refMoved(ref);
    throw this.unavailable(new GitCommandError(['push'], code, null, ''));
  }

  /**
   * `update-ref <ref> <next> <old>`: git's own compare-and-swap under the ref lock, done
   * here by the same protocol where that is certain to be the same (./ref-cas.ts).
   */
  private async updateRefInPlace(dir: string, branch: string, next: string, expectedOld: string): Promise<void> {
    const ref = `refs/heads/${branch}`;
    const cas = casBranch(this.localRefs, dir, branch, next, expectedOld, { message: 'svc: merge' });
    if (cas === 'stale') throw refMoved(ref);
    if (cas === 'moved') {
      await failpointAsync('git.push.after-remote-moved');
      return;
    }
    let code: number;
    try {
      code = (await runGit(['update-ref', '-m', 'svc: merge', '--', ref, next, expectedOld], { cwd: dir, okCodes: [0, 128] })).code;
    } catch (e) {
      throw this.unavailable(e);
    }
    if (code !== 0) {
      const now = (await this.readTips([branch]))[branch] ?? null;
      if (now !== expectedOld) throw refMoved(ref);
      throw repoUnavailable();
    }
    // Tests: the ref moved, and then the answer is lost on its way back.
    await failpointAsync('git.push.after-remote-moved');
  }

  private async network(args: string[]): Promise<Buffer> {
    try {
      return (await this.git(args)).stdout;
    } catch (e) {
      throw this.unavailable(e);
    }
  }

  /**
   * The policy again, right before git connects; for http(s) the connection is pinned to
   * the addresses just checked (`http.curloptResolve`), so a second resolution by git
   * cannot land elsewhere. Redirects are never followed.
   */
  private async connectArgs(): Promise<string[]> {
    const args = ['-c', 'http.followRedirects=false'];
    if (!this.policy) return args;
    const t = await checkRepoUrl(this.url, this.policy, { hasCredentials: this.hasCredentials });
    if ((t.protocol === 'http:' || t.protocol === 'https:') && t.port && !net.isIP(t.host) && t.addresses.length > 0) {
      const addrs = t.addresses.map((a) => (net.isIPv6(a) ? `[${a}]` : a)).join(',');
      args.push('-c', `http.curloptResolve=${t.host}:${t.port}:${addrs}`);
    }
    return args;
  }

  private git(args: string[], extra: GitRunOptions = {}) {
    return Promise.all([this.mirror.ensureCreated(), this.connectArgs()]).then(([, connect]) =>
      runGit([...this.auth.configArgs, ...connect, ...args], {
        cwd: this.mirror.path,
        env: this.auth.env,
        secrets: this.auth.secrets,
        timeoutMs: this.timeoutMs,
        ...extra,
      }),
    );
  }

  /**
   * The Node push (./http-push.ts) where it applies: an http(s) URL, no proxy or git http
   * variable in the environment, not given up on for this repository. Null when it was not
   * tried or could not push with nothing sent (then `git push` runs, as before; a Node push
   * that could not is not tried again for a while).
   */
  private async nodePush(
    update: { ref: string; next: string },
    leases: Array<{ ref: string; expected: string | null }>,
    haves: string[],
  ): Promise<Exclude<HttpPushOutcome, { kind: 'fallback' }> | null> {
    if (Date.now() < this.nodePushAfter || !nodePushApplies(this.url)) return null;
    await this.mirror.ensureCreated();
    const t = this.policy ? await checkRepoUrl(this.url, this.policy, { hasCredentials: this.hasCredentials }) : null;
    step('git: push: policy');
    const outcome = await httpPush({ url: this.url, credentials: this.credentials, addresses: t?.addresses ?? [], timeoutMs: this.timeoutMs, gitDir: this.mirror.path, leases, update, haves });
    if (outcome.kind !== 'fallback') return outcome;
    this.nodePushAfter = Date.now() + 10 * 60_000;
    this.log?.info({ why: outcome.why }, 'pushing with git: the Node push cannot here');
    return null;
  }

  /** Until when pushes skip the Node push (it could not push here). */
  private nodePushAfter = 0;

  /** A push that failed without a status from the server: as git's exit 128 (refused, unreachable, cut off) maps today. */
  private pushFailed(why: string): Error {
    return this.unavailable(new GitCommandError(['push'], 128, null, why));
  }

  private unavailable(e: unknown): Error {
    if (!isGitCommandError(e)) return e instanceof Error ? e : new Error(String(e));
    this.log?.warn({ exit_code: e.exitCode, stderr: e.stderr }, 'remote repository unreachable');
    return repoUnavailable(e);
  }
}

/** The server refused the update (a hook, a protected branch), with its reason. */
function pushRejected(branch: string, reason: string): DomainError {
  return new DomainError('unavailable', 'Push rejected', `The repository refused to update ${branch}: ${reason}.`, { reason });
}
