import { DomainError, isDomainError, notFound } from '../../domain/errors.js';
import { assertBranchName, assertSha } from '../../domain/refs.js';
import { failpointAsync } from '../../lib/failpoints.js';
import { runGit } from '../../lib/git-run.js';
import type { Logger } from '../../lib/logger.js';
import { step } from '../../lib/step-trace.js';
import { headModified, refMoved, repoUnavailable } from './errors.js';
import type { LocalRefReader } from './local-refs.js';
import { exportTree, readFileAt, writeFileCommit, requireLiveTips } from './plumbing.js';
import type { CommitFileRequest, DiffResult, GitEngine, MergeHooks, MergePreview, MergeRequest, MergeResult, ProjectRepo } from './port.js';
import { SYSTEM_IDENTITY } from './port.js';
import { casBranch } from './ref-cas.js';

/**
 * A bare repository on this machine, worked on in place: a managed repository (this
 * service hosts it, ./managed-repo.ts) or a `file://` project's repository
 * (./open-repo.ts). Tips are read from its ref files (./local-refs.ts), diffs, previews
 * and merges are computed by the engine in it, and a merge moves the base by a
 * compare-and-swap of the ref (./ref-cas.ts, else `update-ref <new> <old>`). No mirror,
 * no fetch, no push. Since no hook runs for any git the server starts (lib/git-run.ts),
 * moving a ref in place is exactly what a push would do, whatever hooks the repository
 * holds.
 *
 * Two directories: `gitDir`, whose ref files Node reads and moves, and `runDir`, where git
 * and the engine run. For a managed repository they are the same (its config is the
 * server's); for a `file://` one `runDir` is the server's view of it (./local-view.ts), so
 * no git process reads the repository's own config.
 */
export interface LocalRepoOptions {
  /** The repository's git directory, resolved by `prepare` when given. */
  gitDir: string | (() => string);
  runDir: string | (() => string);
  /** The repository's refs read from disk (null: git reads them). */
  refs: LocalRefReader | null;
  engine: GitEngine;
  logger?: Logger | undefined;
  /** Run before the first use and again after a failure (resolving the directories, making the view). */
  prepare?: () => Promise<void>;
  /** Run before every read of tips and before a merge publishes (the URL policy, again). */
  check?: () => Promise<void>;
}

export function openLocalRepo(opts: LocalRepoOptions): ProjectRepo {
  return new LocalBareRepo(opts);
}

class LocalBareRepo implements ProjectRepo {
  private prepared: Promise<void> | null = null;

  constructor(private readonly o: LocalRepoOptions) {}

  private get gitDir(): string {
    return typeof this.o.gitDir === 'string' ? this.o.gitDir : this.o.gitDir();
  }

  private get dir(): string {
    return typeof this.o.runDir === 'string' ? this.o.runDir : this.o.runDir();
  }

  private async ready(): Promise<void> {
    if (this.o.prepare) {
      this.prepared ??= this.o.prepare().catch((err: unknown) => {
        this.prepared = null;
        throw err;
      });
      await this.prepared;
    }
  }

  async readTips(branches: string[]): Promise<Record<string, string | null>> {
    const names = [...new Set(branches.map((b) => assertBranchName(b)))];
    if (names.length === 0) return {};
    await this.o.check?.();
    await this.ready();
    const fast = this.o.refs ? await this.o.refs.readTips(names) : null;
    if (fast) return fast;
    const tips: Record<string, string | null> = {};
    for (const n of names) tips[n] = await this.git(() => this.o.engine.resolveBranch(this.dir, n));
    return tips;
  }

  async diffBranches(baseRef: string, headRef: string): Promise<DiffResult> {
    const { base, head } = await this.liveTips(baseRef, headRef);
    return this.git(() => this.o.engine.diff(this.dir, base, head));
  }

  async diffCommits(baseSha: string, headSha: string): Promise<DiffResult> {
    assertSha(baseSha, 'base_sha');
    assertSha(headSha, 'head_sha');
    if (!(await this.hasCommits([baseSha, headSha]))) throw notFound('Commit');
    return this.git(() => this.o.engine.diff(this.dir, baseSha, headSha));
  }

  async preview(baseRef: string, headRef: string): Promise<MergePreview> {
    const { base, head } = await this.liveTips(baseRef, headRef);
    return this.git(() => this.o.engine.preview(this.dir, base, head));
  }

  async branchContains(branch: string, sha: string): Promise<boolean> {
    assertSha(sha);
    const tip = (await this.readTips([assertBranchName(branch)]))[branch] ?? null;
    if (tip === null) return false;
    if (tip === sha) return true;
    if (!(await this.hasCommits([sha]))) return false;
    return this.git(() => this.o.engine.isAncestor(this.dir, sha, tip));
  }

  async merge(req: MergeRequest, hooks: MergeHooks = {}): Promise<MergeResult> {
    const baseRef = assertBranchName(req.base_ref, 'base_ref');
    const headRef = assertBranchName(req.head_ref, 'head_ref');
    if (req.expected_head_sha !== undefined) assertSha(req.expected_head_sha, 'expected_head_sha');
    const { base, head } = await this.liveTips(baseRef, headRef);
    step('git: read tips');
    if (req.expected_head_sha !== undefined && req.expected_head_sha !== head) throw headModified(req.expected_head_sha, head);
    if (req.expected_base_sha !== undefined && req.expected_base_sha !== base) throw refMoved(`refs/heads/${baseRef}`);
    await this.o.check?.();
    const result = await this.git(() =>
      this.o.engine.createMerge(this.dir, { base_sha: base, head_sha: head, message: req.message, author: SYSTEM_IDENTITY }),
    );
    await hooks.beforePublish?.(result);
    if (result.kind !== 'up-to-date') await this.moveBranch(baseRef, result.merge_commit_sha, base);
    step('git: update-ref');
    this.o.logger?.info({ base_ref: baseRef, head_ref: headRef, kind: result.kind, sha: result.merge_commit_sha }, 'merged');
    return result;
  }

  async createBranch(branch: string, fromRef: string): Promise<string> {
    assertBranchName(branch, 'branch');
    assertBranchName(fromRef, 'base_ref');
    const tips = await this.readTips([fromRef, branch]);
    const from = tips[fromRef] ?? null;
    if (from === null) throw notFound(`Branch '${fromRef}'`);
    if (tips[branch] !== null) throw new DomainError('conflict', 'Conflict', `Branch '${branch}' already exists.`);
    await this.git(() => this.o.engine.updateBranch(this.dir, branch, from, null));
    return from;
  }

  async readFileAt(sha: string, file: string): Promise<Buffer | null> {
    if (!(await this.hasCommits([assertSha(sha)]))) throw notFound('Commit');
    return readFileAt(this.dir, sha, file);
  }

  /** The commit is written in place and the new branch created with compare-and-swap (it must not exist). */
  async commitFileOnNewBranch(req: CommitFileRequest): Promise<string> {
    assertBranchName(req.branch, 'branch');
    if (!(await this.hasCommits([assertSha(req.fromSha)]))) throw notFound('Commit');
    const sha = await writeFileCommit(this.dir, req);
    await this.git(() => this.o.engine.updateBranch(this.dir, req.branch, sha, null));
    return sha;
  }

  async computeMerge(baseSha: string, headSha: string, message: string): Promise<MergeResult> {
    if (!(await this.hasCommits([assertSha(baseSha), assertSha(headSha)]))) throw notFound('Commit');
    return this.git(() => this.o.engine.createMerge(this.dir, { base_sha: baseSha, head_sha: headSha, message, author: SYSTEM_IDENTITY }));
  }

  async exportTree(sha: string, dest: string): Promise<void> {
    if (!(await this.hasCommits([assertSha(sha)]))) throw notFound('Commit');
    await exportTree(this.dir, sha, dest);
  }

  /**
   * Compare-and-swap of the branch: without a git process where ./ref-cas.ts is certain
   * to act as git would, else `update-ref` under git's ref lock.
   */
  async moveBranch(branch: string, next: string, expectedOld: string): Promise<void> {
    assertBranchName(branch, 'branch');
    await this.o.check?.();
    await this.ready();
    const cas = casBranch(this.o.refs, this.gitDir, branch, next, expectedOld, { message: 'svc: update branch' });
    if (cas === 'stale') throw refMoved(`refs/heads/${branch}`);
    if (cas === null) await this.git(() => this.o.engine.updateBranch(this.dir, branch, next, expectedOld));
    // Tests: the ref moved, and then the answer is lost on its way back.
    await failpointAsync('git.push.after-remote-moved');
  }

  private liveTips(baseRef: string, headRef: string): Promise<{ base: string; head: string }> {
    return requireLiveTips((b) => this.readTips(b), baseRef, headRef);
  }

  private async hasCommits(shas: string[]): Promise<boolean> {
    await this.ready();
    const r = await this.git(() =>
      runGit(['cat-file', '--batch-check=%(objectname) %(objecttype)'], {
        cwd: this.dir,
        input: shas.map((sha) => `${assertSha(sha)}^{commit}\n`).join(''),
      }),
    );
    const lines = r.stdout.toString('utf8').split('\n').filter(Boolean);
    return lines.length === shas.length && lines.every((l) => l.endsWith(' commit'));
  }

  /**
   * A git call on the repository: an answer about it passes. A failure to run at all on a
   * `file://` repository is retried once after preparing again (the view is a cache that
   * may have been deleted), then is `unavailable` (the repository is gone).
   */
  private async git<T>(fn: () => Promise<T>): Promise<T> {
    await this.ready();
    try {
      return await fn();
    } catch (err) {
      if (isDomainError(err) || !this.o.prepare) throw err;
      this.prepared = null;
    }
    try {
      await this.ready();
      return await fn();
    } catch (err) {
      if (isDomainError(err)) throw err;
      this.prepared = null;
      this.o.logger?.warn({ err: (err as Error).message }, 'local repository unreadable');
      throw repoUnavailable();
    }
  }
}
