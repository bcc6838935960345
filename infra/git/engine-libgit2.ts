import type { DiffFile, DiffResult, FileStatus, GitEngine, MergeCommitRequest, MergePreview, MergeResult } from './port.js';
import { assertBranchName, assertSha } from '../../domain/refs.js';
import { mergeFailed, refMoved, unrelatedHistories } from './errors.js';
import { classify, previewFor } from './engine-ort.js';
import { ngErrno, type NgRepository, type NodeGit } from './nodegit-types.js';
import { diffResult } from './diff-result.js';
import { systemClock } from '../../lib/clock.js';

/** nodegit, or why it could not be loaded (not installed, failed to build, ABI mismatch...). */
export async function tryLoadNodeGit(): Promise<{ nodegit: NodeGit; reason?: undefined } | { nodegit: null; reason: string }> {
  try {
    const mod = (await import('nodegit' as string)) as { default?: unknown };
    return { nodegit: (mod.default ?? mod) as NodeGit };
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    const reason = e.code === 'ERR_MODULE_NOT_FOUND' ? 'nodegit is not installed' : `nodegit failed to load: ${e.message?.split('\n')[0] ?? String(err)}`;
    return { nodegit: null, reason };
  }
}

export class Libgit2Engine implements GitEngine {
  readonly name = 'libgit2' as const;
  private readonly repos = new Map<string, Promise<NgRepository>>();
  private readonly queues = new Map<string, Promise<unknown>>();

  constructor(private readonly g: NodeGit) {}

  /**
   * Runs native work for one repository one operation at a time: concurrent use of one
   * nodegit repository (or diff) from the libuv pool has crashed the process in tests.
   */
  private serial<T>(path: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.queues.get(path) ?? Promise.resolve();
    const run = prev.then(fn, fn);
    const settled = run.catch(() => undefined);
    this.queues.set(path, settled);
    void settled.then(() => {
      if (this.queues.get(path) === settled) this.queues.delete(path);
    });
    return run;
  }

  private repo(path: string): Promise<NgRepository> {
    let r = this.repos.get(path);
    if (!r) {
      r = this.g.Repository.open(path);
      r.catch(() => this.repos.delete(path));
      this.repos.set(path, r);
    }
    return r;
  }

  resolveBranch(repoPath: string, branch: string): Promise<string | null> {
    return this.serial(repoPath, () => this.resolveBranchNow(repoPath, branch));
  }

  private async resolveBranchNow(repoPath: string, branch: string): Promise<string | null> {
    assertBranchName(branch);
    const repo = await this.repo(repoPath);
    try {
      const ref = await this.g.Reference.lookup(repo, `refs/heads/${branch}`);
      return (await ref.peel(this.g.Object.TYPE.COMMIT)).id().tostrS();
    } catch (e) {
      if (ngErrno(e) === this.g.Error.CODE.ENOTFOUND) return null;
      throw e;
    }
  }

  mergeBase(repoPath: string, a: string, b: string): Promise<string | null> {
    return this.serial(repoPath, () => this.mergeBaseNow(repoPath, a, b));
  }

  private async mergeBaseNow(repoPath: string, a: string, b: string): Promise<string | null> {
    assertSha(a, 'base_sha');
    assertSha(b, 'head_sha');
    const repo = await this.repo(repoPath);
    // Make a missing object an error rather than "no merge base".
    await repo.getCommit(a);
    await repo.getCommit(b);
    try {
      return (await this.g.Merge.base(repo, this.oid(a), this.oid(b))).tostrS();
    } catch (e) {
      if (ngErrno(e) === this.g.Error.CODE.ENOTFOUND) return null;
      throw e;
    }
  }

  isAncestor(repoPath: string, ancestor: string, descendant: string): Promise<boolean> {
    return this.serial(repoPath, () => this.isAncestorNow(repoPath, ancestor, descendant));
  }

  private async isAncestorNow(repoPath: string, ancestor: string, descendant: string): Promise<boolean> {
    assertSha(ancestor, 'ancestor');
    assertSha(descendant, 'descendant');
    if (ancestor === descendant) return true; // git's --is-ancestor counts a commit as its own ancestor
    const repo = await this.repo(repoPath);
    return (await this.g.Graph.descendantOf(repo, this.oid(descendant), this.oid(ancestor))) === 1;
  }

  diff(repoPath: string, baseSha: string, headSha: string): Promise<DiffResult> {
    return this.serial(repoPath, () => this.diffNow(repoPath, baseSha, headSha));
  }

  private async diffNow(repoPath: string, baseSha: string, headSha: string): Promise<DiffResult> {
    const mb = await this.mergeBaseNow(repoPath, baseSha, headSha);
    const repo = await this.repo(repoPath);
    const head = await repo.getCommit(headSha);
    const oldTree = mb === null ? null : await (await repo.getCommit(mb)).getTree();
    // No rename detection (no findSimilar): a rename is a deletion and an addition, as with --no-renames.
    const diff = await this.g.Diff.treeToTree(repo, oldTree, await head.getTree());
    // One native call at a time per diff object: nodegit is not safe with concurrent use of one diff.
    const patches = await diff.patches();
    const patch = await diff.toBuf(this.g.Diff.FORMAT.PATCH);
    const D = this.g.Diff.DELTA;
    const files: DiffFile[] = patches.map((p) => {
      const status: FileStatus = p.status() === D.ADDED ? 'added' : p.status() === D.DELETED ? 'deleted' : 'modified';
      const binary = ((p.newFile().flags() | p.oldFile().flags()) & this.g.Diff.FLAG.BINARY) !== 0;
      const s = p.lineStats();
      return {
        path: status === 'deleted' ? p.oldFile().path() : p.newFile().path(),
        status,
        additions: binary ? 0 : s.total_additions,
        deletions: binary ? 0 : s.total_deletions,
        binary,
      };
    });
    return diffResult(baseSha, headSha, mb, files, String(patch));
  }

  preview(repoPath: string, baseSha: string, headSha: string): Promise<MergePreview> {
    return this.serial(repoPath, () => this.previewNow(repoPath, baseSha, headSha));
  }

  private async previewNow(repoPath: string, baseSha: string, headSha: string): Promise<MergePreview> {
    const mb = await this.mergeBaseNow(repoPath, baseSha, headSha);
    const c = classify(baseSha, headSha, mb);
    if (c.kind !== 'three-way') return previewFor(baseSha, headSha, mb, c.kind, []);
    const m = await this.mergeIndex(repoPath, baseSha, headSha);
    return previewFor(baseSha, headSha, mb, m.conflicts.length ? 'conflicted' : 'clean', m.conflicts);
  }

  createMerge(repoPath: string, req: MergeCommitRequest): Promise<MergeResult> {
    return this.serial(repoPath, () => this.createMergeNow(repoPath, req));
  }

  private async createMergeNow(repoPath: string, req: MergeCommitRequest): Promise<MergeResult> {
    const base = assertSha(req.base_sha, 'base_sha');
    const head = assertSha(req.head_sha, 'head_sha');
    const mb = await this.mergeBaseNow(repoPath, base, head);
    const c = classify(base, head, mb);
    if (c.kind === 'unrelated') throw unrelatedHistories();
    if (c.kind === 'up-to-date') return { kind: 'up-to-date', base_sha: base, head_sha: head, merge_commit_sha: base };
    if (c.kind === 'fast-forward') return { kind: 'fast-forward', base_sha: base, head_sha: head, merge_commit_sha: head };
    const m = await this.mergeIndex(repoPath, base, head);
    if (m.conflicts.length) throw mergeFailed(m.conflicts);
    const repo = await this.repo(repoPath);
    const tree = await m.index.writeTreeTo(repo);
    const when = Math.floor((req.date ?? systemClock.now()).getTime() / 1000);
    const sig = this.g.Signature.create(req.author.name, req.author.email, when, 0);
    const message = req.message.endsWith('\n') ? req.message : `${req.message}\n`;
    const parents = [await repo.getCommit(base), await repo.getCommit(head)];
    const id = await repo.createCommit(null, sig, sig, message, tree, parents);
    return { kind: 'merge-commit', base_sha: base, head_sha: head, merge_commit_sha: id.tostrS() };
  }

  updateBranch(repoPath: string, branch: string, next: string, expectedOld: string | null): Promise<void> {
    return this.serial(repoPath, () => this.updateBranchNow(repoPath, branch, next, expectedOld));
  }

  private async updateBranchNow(repoPath: string, branch: string, next: string, expectedOld: string | null): Promise<void> {
    assertBranchName(branch);
    assertSha(next, 'next');
    const ref = `refs/heads/${branch}`;
    const repo = await this.repo(repoPath);
    const C = this.g.Error.CODE;
    try {
      if (expectedOld === null) await this.g.Reference.create(repo, ref, this.oid(next), 0, 'svc: create branch');
      else
        await this.g.Reference.createMatching(repo, ref, this.oid(next), 1, this.oid(assertSha(expectedOld, 'expected_old')), 'svc: update branch');
    } catch (e) {
      const errno = ngErrno(e);
      if (errno === C.EEXISTS || errno === C.EMODIFIED || errno === C.ENOTFOUND) throw refMoved(ref);
      throw e;
    }
  }

  private async mergeIndex(repoPath: string, base: string, head: string) {
    const repo = await this.repo(repoPath);
    const ours = await repo.getCommit(base);
    const theirs = await repo.getCommit(head);
    const index = await this.g.Merge.commits(repo, ours, theirs);
    const conflicts = index.hasConflicts()
      ? [...new Set(index.entries().filter((e) => this.g.Index.entryStage(e) > 0).map((e) => e.path))]
      : [];
    return { index, conflicts };
  }

  private oid(sha: string) {
    return this.g.Oid.fromString(sha);
  }
}
