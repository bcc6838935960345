import type { DiffFile, DiffResult, FileStatus, GitEngine, MergeCommitRequest, MergePreview, MergeResult } from './port.js';
import { assertBranchName, assertSha } from './refs.js';
import { mergeFailed, refMoved, unrelatedHistories } from './errors.js';
import { classify, previewFor } from './engine-ort.js';
import { ngErrno, type NgRepository, type NodeGit } from './nodegit-types.js';

/**
 * libgit2 through nodegit. Same port and, where libgit2 and merge-ort agree, the same
 * results; they differ on directory renames (merge-ort's directory-rename detection
 * reports a conflict, libgit2 merges cleanly without moving the file), which
 * test/git/engine-differences.int.spec.ts pins down.
 */
export async function loadNodeGit(): Promise<NodeGit | null> {
  try {
    const mod = (await import('nodegit' as string)) as { default?: unknown };
    return (mod.default ?? mod) as NodeGit;
  } catch {
    return null;
  }
}

export class Libgit2Engine implements GitEngine {
  readonly name = 'libgit2' as const;
  private readonly repos = new Map<string, Promise<NgRepository>>();

  constructor(private readonly g: NodeGit) {}

  private repo(path: string): Promise<NgRepository> {
    let r = this.repos.get(path);
    if (!r) {
      r = this.g.Repository.open(path);
      r.catch(() => this.repos.delete(path));
      this.repos.set(path, r);
    }
    return r;
  }

  async resolveBranch(repoPath: string, branch: string): Promise<string | null> {
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

  async mergeBase(repoPath: string, a: string, b: string): Promise<string | null> {
    assertSha(a, 'base_sha');
    assertSha(b, 'head_sha');
    const repo = await this.repo(repoPath);
    // Make a missing object an error rather than "no merge base".
    await Promise.all([repo.getCommit(a), repo.getCommit(b)]);
    try {
      return (await this.g.Merge.base(repo, this.oid(a), this.oid(b))).tostrS();
    } catch (e) {
      if (ngErrno(e) === this.g.Error.CODE.ENOTFOUND) return null;
      throw e;
    }
  }

  async isAncestor(repoPath: string, ancestor: string, descendant: string): Promise<boolean> {
    assertSha(ancestor, 'ancestor');
    assertSha(descendant, 'descendant');
    if (ancestor === descendant) return true; // git's --is-ancestor counts a commit as its own ancestor
    const repo = await this.repo(repoPath);
    return (await this.g.Graph.descendantOf(repo, this.oid(descendant), this.oid(ancestor))) === 1;
  }

  async diff(repoPath: string, baseSha: string, headSha: string): Promise<DiffResult> {
    const mb = await this.mergeBase(repoPath, baseSha, headSha);
    const repo = await this.repo(repoPath);
    const head = await repo.getCommit(headSha);
    const oldTree = mb === null ? null : await (await repo.getCommit(mb)).getTree();
    // No rename detection (no findSimilar): a rename is a deletion and an addition, as with --no-renames.
    const diff = await this.g.Diff.treeToTree(repo, oldTree, await head.getTree());
    const [patches, patch] = await Promise.all([diff.patches(), diff.toBuf(this.g.Diff.FORMAT.PATCH)]);
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
    return {
      base_sha: baseSha,
      head_sha: headSha,
      merge_base: mb,
      files,
      additions: files.reduce((n, f) => n + f.additions, 0),
      deletions: files.reduce((n, f) => n + f.deletions, 0),
      patch: String(patch),
    };
  }

  async preview(repoPath: string, baseSha: string, headSha: string): Promise<MergePreview> {
    const mb = await this.mergeBase(repoPath, baseSha, headSha);
    const c = classify(baseSha, headSha, mb);
    if (c.kind !== 'three-way') return previewFor(baseSha, headSha, mb, c.kind, []);
    const m = await this.mergeIndex(repoPath, baseSha, headSha);
    return previewFor(baseSha, headSha, mb, m.conflicts.length ? 'conflicted' : 'clean', m.conflicts);
  }

  async createMerge(repoPath: string, req: MergeCommitRequest): Promise<MergeResult> {
    const base = assertSha(req.base_sha, 'base_sha');
    const head = assertSha(req.head_sha, 'head_sha');
    const mb = await this.mergeBase(repoPath, base, head);
    const c = classify(base, head, mb);
    if (c.kind === 'unrelated') throw unrelatedHistories();
    if (c.kind === 'up-to-date') return { kind: 'up-to-date', base_sha: base, head_sha: head, merge_commit_sha: base };
    if (c.kind === 'fast-forward') return { kind: 'fast-forward', base_sha: base, head_sha: head, merge_commit_sha: head };
    const m = await this.mergeIndex(repoPath, base, head);
    if (m.conflicts.length) throw mergeFailed(m.conflicts);
    const repo = await this.repo(repoPath);
    const tree = await m.index.writeTreeTo(repo);
    const when = Math.floor((req.date ?? new Date()).getTime() / 1000);
    const sig = this.g.Signature.create(req.author.name, req.author.email, when, 0);
    const message = req.message.endsWith('\n') ? req.message : `${req.message}\n`;
    const parents = await Promise.all([repo.getCommit(base), repo.getCommit(head)]);
    const id = await repo.createCommit(null, sig, sig, message, tree, parents);
    return { kind: 'merge-commit', base_sha: base, head_sha: head, merge_commit_sha: id.tostrS() };
  }

  async updateBranch(repoPath: string, branch: string, next: string, expectedOld: string | null): Promise<void> {
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
    const [ours, theirs] = await Promise.all([repo.getCommit(base), repo.getCommit(head)]);
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
