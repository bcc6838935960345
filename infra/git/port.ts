/**
 * The git port: everything the CR API and the workers ask of a repository.
 *
 * Two layers:
 *  - `GitEngine` works on a local bare repository by commit ids. Two implementations
 *    (merge-ort through the git CLI, libgit2 through nodegit) pass one conformance suite.
 *  - `ProjectRepo` is a project's repository as the rest of the system sees it: it reads
 *    branch tips live from the real remote, keeps a bare mirror for objects, and moves the
 *    base branch on the remote only by compare-and-swap (push with lease).
 *
 * Errors are `DomainError`s (domain/errors.ts) or the typed git errors in ./errors.ts;
 * nothing here parses git's human-readable messages.
 */

export type { FileStatus, DiffFile, DiffResult, MergePreview } from '../../domain/change-request/views.js';
import type { DiffResult, MergePreview } from '../../domain/change-request/views.js';

export interface Identity {
  name: string;
  email: string;
}

export interface MergeCommitRequest {
  base_sha: string;
  head_sha: string;
  message: string;
  author: Identity;
  /** Commit time, so retries and tests can be deterministic. Defaults to now. */
  date?: Date;
}

/**
 * - `fast-forward`: head is strictly ahead of base; the base moves to head.
 * - `merge-commit`: a new commit with parents (base, head).
 * - `up-to-date`: head is already contained in base (e.g. pushed there directly); nothing
 *   moves and `merge_commit_sha` is the base tip, which already holds the head's work.
 */
export type MergeKind = 'fast-forward' | 'merge-commit' | 'up-to-date';

export interface MergeResult {
  kind: MergeKind;
  /** Base tip before the merge. */
  base_sha: string;
  /** Head tip that was merged. */
  head_sha: string;
  /** The new base tip: equals head_sha for a fast-forward, base_sha when up to date. */
  merge_commit_sha: string;
}

/** Works on one local (bare) repository, by commit ids. */
export interface GitEngine {
  readonly name: 'git' | 'libgit2';
  /** Commit id of `refs/heads/<branch>`, or null when the branch does not exist. */
  resolveBranch(repoPath: string, branch: string): Promise<string | null>;
  mergeBase(repoPath: string, a: string, b: string): Promise<string | null>;
  isAncestor(repoPath: string, ancestor: string, descendant: string): Promise<boolean>;
  diff(repoPath: string, baseSha: string, headSha: string): Promise<DiffResult>;
  preview(repoPath: string, baseSha: string, headSha: string): Promise<MergePreview>;
  /**
   * Computes the merge of head into base without touching any ref: the fast-forward
   * target, or a new merge commit (parents base, head). Throws a `merge_failed`
   * DomainError with `details.conflicts` when the merge conflicts; never writes a commit
   * then. Throws `validation` for unrelated histories.
   */
  createMerge(repoPath: string, req: MergeCommitRequest): Promise<MergeResult>;
  /** Moves `refs/heads/<branch>` from `expectedOld` (null: must not exist) to `next`, atomically. */
  updateBranch(repoPath: string, branch: string, next: string, expectedOld: string | null): Promise<void>;
}

export interface MergeRequest {
  base_ref: string;
  head_ref: string;
  message: string;
  /** When given and the live head differs: `head_modified` error. */
  expected_head_sha?: string;
  /**
   * When given and the live base differs: `concurrency` (nothing moves). Merge-when-green
   * merges only onto the base its checks ran against.
   */
  expected_base_sha?: string;
}

export interface MergeHooks {
  /**
   * Called with the computed result after the merge commit exists in the mirror and
   * before the base moves on the remote. The merge worker records its intent here, so a
   * crash between the ref update and the event append is recognised on retry.
   */
  beforePublish?(result: MergeResult): Promise<void>;
  /**
   * Called when a result passed to `beforePublish` was certainly not published (its push
   * was refused before anything was sent: the tips it was computed on were stale) and the
   * merge goes on from live tips: what was recorded for it can go. A result computed
   * after that is passed to `beforePublish` again.
   */
  notPublished?(result: MergeResult): Promise<void>;
}

/** Where a project's repository lives and how to reach it. */
export interface RepoLocation {
  projectId: string;
  /** Any git URL: file://, https://, ssh://. Never carries credentials. */
  url: string;
  /** For https remotes; handed to git through a credential helper, never argv or config. */
  credentials?: { username: string; password: string };
}

/** A project's repository as the API and the workers see it. */
export interface ProjectRepo {
  /**
   * Live tips of the named branches, one round trip to the remote for all of them.
   * A missing branch maps to null. An unreachable remote throws `unavailable`.
   */
  readTips(branches: string[]): Promise<Record<string, string | null>>;
  /** Live three-dot diff between two branches (missing branch: `not_found`). */
  diffBranches(baseRef: string, headRef: string): Promise<DiffResult>;
  /** Three-dot diff between two recorded commits (merged CRs). */
  diffCommits(baseSha: string, headSha: string): Promise<DiffResult>;
  preview(baseRef: string, headRef: string): Promise<MergePreview>;
  /** Whether commit `sha` is in the live history of `branch` (false when either is missing). */
  branchContains(branch: string, sha: string): Promise<boolean>;
  /**
   * Merges head into base on the remote: fast-forward when head is strictly ahead, else
   * a merge commit by the system identity; the base moves only if it still has the tip
   * the merge was computed from (else `concurrency`). The merge commit is made where the
   * objects are (a local repository itself, a remote's mirror), which so already holds the
   * new base tip: nothing needs fetching afterwards.
   */
  merge(req: MergeRequest, hooks?: MergeHooks): Promise<MergeResult>;
  /** Creates `branch` at the tip of `fromRef` on the remote (session branches). */
  createBranch(branch: string, fromRef: string): Promise<string>;
  /**
   * The bytes of the file at `path` in commit `sha` (`git cat-file`, no checkout), or
   * null when the commit has no such file (or it is not a regular file).
   */
  readFileAt(sha: string, path: string): Promise<Buffer | null>;
  /**
   * One new commit on top of `fromSha` that sets the file at `path` to `content` (its
   * mode kept), built with plumbing in a temporary index (no work tree), pushed as the
   * new branch `branch` (which must not exist). Returns the commit id.
   */
  commitFileOnNewBranch(req: CommitFileRequest): Promise<string>;
  /**
   * The merge of `headSha` into `baseSha` as `merge` would make it, without moving any
   * ref: the commit a check runs on (the head for a fast-forward). Conflicts: `merge_failed`.
   */
  computeMerge(baseSha: string, headSha: string, message: string): Promise<MergeResult>;
  /** Writes the tree of commit `sha` into the (empty) directory `dest` (`git archive`). */
  exportTree(sha: string, dest: string): Promise<void>;
  /**
   * Moves `branch` to the commit `next` (made here by `computeMerge`) only if it is still at
   * `expectedOld`: the ref's compare-and-swap, or a push with lease for a remote. A branch
   * elsewhere: `concurrency`, nothing moved. The merge queue lands what it checked this way.
   */
  moveBranch(branch: string, next: string, expectedOld: string): Promise<void>;
}

export interface CommitFileRequest {
  branch: string;
  fromSha: string;
  path: string;
  content: string;
  message: string;
  author: Identity;
}

/** The fixed identity that authors merge commits. */
export const SYSTEM_IDENTITY: Identity = { name: 'svc', email: 'noreply@svc.local' };

export const defaultMergeMessage = (number: number, title: string): string => `Merge CR #${number}: ${title}`;
