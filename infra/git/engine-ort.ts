import type { DiffFile, DiffResult, FileStatus, GitEngine, MergeCommitRequest, MergePreview, MergeResult } from './port.js';
import { assertBranchName, assertSha } from './refs.js';
import { runGit, splitNul, type GitResult } from './run.js';
import { isGitCommandError, mergeFailed, refMoved, unrelatedHistories } from './errors.js';
import { diffResult } from './diff-result.js';

/**
 * The default engine: git's own merge-ort through plumbing (merge-tree --write-tree,
 * commit-tree, update-ref) on a bare repository. No worktree, no index, so the verdict
 * is exactly what `git merge` gives a user locally.
 */
export class OrtEngine implements GitEngine {
  readonly name = 'git' as const;
  /**
   * Merge bases by (repo, a, b). Commits are immutable, so is their merge base (replace
   * objects are off, mirrors are never shallow): a CR read repeats the same pair until a
   * branch moves, and then the preview costs one merge-tree instead of two processes.
   */
  private readonly mergeBases = new Map<string, string | null>();
  private static readonly MERGE_BASE_CACHE = 4096;

  async resolveBranch(repoPath: string, branch: string): Promise<string | null> {
    assertBranchName(branch);
    // rev-parse in git 2.39 echoes --end-of-options; the validated full refname cannot be an option.
    const r = await runGit(['rev-parse', '--verify', '--quiet', `refs/heads/${branch}^{commit}`], {
      cwd: repoPath,
      okCodes: [0, 1],
    });
    return r.code === 0 ? r.stdout.toString('utf8').trim() : null;
  }

  async mergeBase(repoPath: string, a: string, b: string): Promise<string | null> {
    assertSha(a, 'base_sha');
    assertSha(b, 'head_sha');
    const key = `${repoPath}\0${a}\0${b}`;
    const hit = this.mergeBases.get(key);
    if (hit !== undefined) return hit;
    const r = await runGit(['merge-base', '--end-of-options', a, b], { cwd: repoPath, okCodes: [0, 1] });
    const mb = r.code === 0 ? r.stdout.toString('utf8').trim() : null;
    if (this.mergeBases.size >= OrtEngine.MERGE_BASE_CACHE) {
      this.mergeBases.delete(this.mergeBases.keys().next().value!);
    }
    this.mergeBases.set(key, mb);
    return mb;
  }

  async isAncestor(repoPath: string, ancestor: string, descendant: string): Promise<boolean> {
    assertSha(ancestor, 'ancestor');
    assertSha(descendant, 'descendant');
    const r = await runGit(['merge-base', '--is-ancestor', '--end-of-options', ancestor, descendant], {
      cwd: repoPath,
      okCodes: [0, 1],
    });
    return r.code === 0;
  }

  async diff(repoPath: string, baseSha: string, headSha: string): Promise<DiffResult> {
    assertSha(baseSha, 'base_sha');
    assertSha(headSha, 'head_sha');
    // merge-base and the three diffs run side by side: `base...head` makes git find the
    // same merge base itself, so the whole diff costs one round of processes.
    const range = `${baseSha}...${headSha}`;
    const [mb, numstat, status, patch] = await Promise.all([
      this.mergeBase(repoPath, baseSha, headSha),
      diffCmd(repoPath, ['--numstat', '-z'], range),
      diffCmd(repoPath, ['--name-status', '-z'], range),
      diffCmd(repoPath, ['--patch'], range),
    ]);
    if (mb === null) {
      // No merge base: everything on head is new, so diff from the empty tree.
      const empty = await emptyTree(repoPath);
      const [n, s, p] = await Promise.all([
        diffCmd(repoPath, ['--numstat', '-z'], empty, headSha),
        diffCmd(repoPath, ['--name-status', '-z'], empty, headSha),
        diffCmd(repoPath, ['--patch'], empty, headSha),
      ]);
      return withoutHugeFiles(repoPath, buildDiff(baseSha, headSha, null, n!, s!, p!), [empty, headSha]);
    }
    return withoutHugeFiles(repoPath, buildDiff(baseSha, headSha, mb, numstat!, status!, patch!), [range]);
  }

  async preview(repoPath: string, baseSha: string, headSha: string): Promise<MergePreview> {
    assertSha(baseSha, 'base_sha');
    assertSha(headSha, 'head_sha');
    const known = this.mergeBases.get(`${repoPath}\0${baseSha}\0${headSha}`);
    if (known !== undefined) {
      const shape = classify(baseSha, headSha, known).kind;
      if (shape !== 'three-way') return previewFor(baseSha, headSha, known, shape, []);
      const t = await mergeTree(repoPath, baseSha, headSha);
      return previewFor(baseSha, headSha, known, t.clean ? 'clean' : 'conflicted', t.conflicts);
    }
    // merge-tree runs beside merge-base: for the common "needs a real merge" case the
    // preview costs one merge-tree's time; its result is dropped when no merge is needed.
    const [mb, tree] = await Promise.all([
      this.mergeBase(repoPath, baseSha, headSha),
      mergeTree(repoPath, baseSha, headSha).catch((e: unknown) => e),
    ]);
    const classified = classify(baseSha, headSha, mb);
    if (classified.kind !== 'three-way') return previewFor(baseSha, headSha, mb, classified.kind, []);
    if (tree instanceof Error) throw tree;
    const t = tree as MergeTreeResult;
    return previewFor(baseSha, headSha, mb, t.clean ? 'clean' : 'conflicted', t.conflicts);
  }

  async createMerge(repoPath: string, req: MergeCommitRequest): Promise<MergeResult> {
    const base = assertSha(req.base_sha, 'base_sha');
    const head = assertSha(req.head_sha, 'head_sha');
    const mb = await this.mergeBase(repoPath, base, head);
    const c = classify(base, head, mb);
    switch (c.kind) {
      case 'unrelated':
        throw unrelatedHistories();
      case 'up-to-date':
        return { kind: 'up-to-date', base_sha: base, head_sha: head, merge_commit_sha: base };
      case 'fast-forward':
        return { kind: 'fast-forward', base_sha: base, head_sha: head, merge_commit_sha: head };
      case 'three-way': {
        const t = await mergeTree(repoPath, base, head);
        if (!t.clean) throw mergeFailed(t.conflicts);
        const message = req.message.endsWith('\n') ? req.message : `${req.message}\n`;
        const r = await runGit(['commit-tree', t.tree, '-p', base, '-p', head, '-F', '-'], {
          cwd: repoPath,
          input: message,
          env: identityEnv(req),
        });
        return { kind: 'merge-commit', base_sha: base, head_sha: head, merge_commit_sha: r.stdout.toString('utf8').trim() };
      }
      default:
        return assertNever(c.kind);
    }
  }

  async updateBranch(repoPath: string, branch: string, next: string, expectedOld: string | null): Promise<void> {
    assertBranchName(branch);
    assertSha(next, 'next');
    if (expectedOld !== null) assertSha(expectedOld, 'expected_old');
    const ref = `refs/heads/${branch}`;
    const old = expectedOld ?? '0'.repeat(next.length);
    try {
      await runGit(['update-ref', '-m', 'svc: update branch', '--end-of-options', ref, next, old], { cwd: repoPath });
    } catch (e) {
      // update-ref's exit code does not say why; the ref's current value does.
      if (isGitCommandError(e) && (await this.resolveBranch(repoPath, branch)) !== expectedOld) throw refMoved(ref);
      throw e;
    }
  }
}

export type MergeShape = 'unrelated' | 'up-to-date' | 'fast-forward' | 'three-way';

/**
 * From the merge base alone: head is contained in base exactly when it is their merge
 * base, and base is strictly behind head exactly when base is the merge base (and differs).
 */
export function classify(base: string, head: string, mb: string | null): { kind: MergeShape } {
  if (mb === null) return { kind: 'unrelated' };
  if (mb === head) return { kind: 'up-to-date' };
  if (mb === base) return { kind: 'fast-forward' };
  return { kind: 'three-way' };
}

export function previewFor(
  base: string,
  head: string,
  mb: string | null,
  outcome: Exclude<MergeShape, 'three-way'> | 'clean' | 'conflicted',
  conflicts: string[],
): MergePreview {
  return {
    base_sha: base,
    head_sha: head,
    merge_base: mb,
    is_up_to_date: outcome === 'up-to-date',
    can_merge: outcome !== 'unrelated' && outcome !== 'conflicted',
    can_fast_forward: outcome === 'fast-forward',
    conflicts: outcome === 'conflicted' ? conflicts : [],
  };
}

interface MergeTreeResult {
  clean: boolean;
  tree: string;
  conflicts: string[];
}

async function mergeTree(repoPath: string, base: string, head: string): Promise<MergeTreeResult> {
  const r = await runGit(['merge-tree', '--write-tree', '-z', '--name-only', '--end-of-options', base, head], {
    cwd: repoPath,
    okCodes: [0, 1],
  });
  return parseMergeTree(r);
}

/**
 * `merge-tree --write-tree -z --name-only` prints `<tree>\0`, then (when conflicted) one
 * `<path>\0` per conflicted file, an empty field, and the informational messages as
 * `<n>\0<path>\0...<type>\0<message>\0`. Exit 1 is a conflict even when no file is
 * listed; the paths named by the messages are reported then.
 */
export function parseMergeTree(r: GitResult): MergeTreeResult {
  const fields = r.stdout.toString('utf8').split('\0');
  const tree = fields[0] ?? '';
  if (r.code === 0) return { clean: true, tree, conflicts: [] };
  const conflicts: string[] = [];
  let i = 1;
  for (; i < fields.length && fields[i] !== ''; i++) conflicts.push(fields[i]!);
  if (conflicts.length === 0) {
    for (i++; i < fields.length; ) {
      const n = Number(fields[i]);
      if (!Number.isInteger(n) || n < 0) break;
      conflicts.push(...fields.slice(i + 1, i + 1 + n));
      i += n + 3; // count, n paths, type, message
    }
  }
  return { clean: false, tree, conflicts: [...new Set(conflicts)] };
}

const DIFF_FLAGS = ['--no-renames', '--no-ext-diff', '--no-textconv', '--no-color', '--ignore-submodules=none'];

/** The most patch text read from git for one diff: memory stays bounded (the API's limits cut further). */
export const PATCH_READ_CAP = 32 * 1024 * 1024;
/** Patch buffers that hit PATCH_READ_CAP (their last file section is partial). */
const cutPatches = new WeakSet<Buffer>();

async function diffCmd(repoPath: string, format: string[], ...revs: string[]): Promise<Buffer | null> {
  // With unrelated histories `a...b` has no merge base and git fails: that is decided
  // by the merge-base call running beside this one, so a failure here is only used then.
  try {
    const capped = format.includes('--patch');
    const r = await runGit(['diff', ...DIFF_FLAGS, ...format, '--end-of-options', ...revs, '--'], {
      cwd: repoPath,
      ...(capped ? { maxStdoutBytes: PATCH_READ_CAP } : {}),
    });
    if (r.truncated) cutPatches.add(r.stdout);
    return r.stdout;
  } catch (e) {
    if (revs.length === 1 && isGitCommandError(e) && e.exitCode === 128) return null;
    throw e;
  }
}

/** A file changing more lines than this is never worth its patch text (the API's limits are far lower). */
const HUGE_FILE_LINES = 100_000;

/**
 * The patch hit PATCH_READ_CAP (a huge generated file, typically): read it again without
 * the files whose stats say they are huge, so the files after them keep their patches.
 */
async function withoutHugeFiles(repoPath: string, result: DiffResult, revs: string[]): Promise<DiffResult> {
  if ((result as { patch_complete?: boolean }).patch_complete !== false) return result;
  const huge = result.files.filter((f) => f.additions + f.deletions > HUGE_FILE_LINES).map((f) => f.path);
  if (huge.length === 0) return result;
  const r = await runGit(
    ['diff', ...DIFF_FLAGS, '--patch', '--end-of-options', ...revs, '--', '.', ...huge.map((p) => `:(exclude,literal)${p}`)],
    { cwd: repoPath, maxStdoutBytes: PATCH_READ_CAP },
  );
  return { ...result, patch: r.stdout.toString('utf8'), ...(r.truncated ? { patch_complete: false } : { patch_complete: true }) } as DiffResult;
}

async function emptyTree(repoPath: string): Promise<string> {
  const r = await runGit(['hash-object', '-t', 'tree', '-w', '--stdin'], { cwd: repoPath, input: '' });
  return r.stdout.toString('utf8').trim();
}

const STATUS: Record<string, FileStatus> = { A: 'added', D: 'deleted', M: 'modified', T: 'modified' };

export function buildDiff(
  baseSha: string,
  headSha: string,
  mb: string | null,
  numstat: Buffer,
  nameStatus: Buffer,
  patch: Buffer,
): DiffResult {
  const stats = new Map<string, { additions: number; deletions: number; binary: boolean }>();
  for (const rec of splitNul(numstat)) {
    const [a, d, ...rest] = rec.split('\t');
    const path = rest.join('\t');
    const binary = a === '-' && d === '-';
    stats.set(path, { additions: binary ? 0 : Number(a), deletions: binary ? 0 : Number(d), binary });
  }
  const fields = splitNul(nameStatus);
  const files: DiffFile[] = [];
  for (let i = 0; i + 1 < fields.length; i += 2) {
    const path = fields[i + 1]!;
    const s = stats.get(path) ?? { additions: 0, deletions: 0, binary: false };
    files.push({ path, status: STATUS[fields[i]!.charAt(0)] ?? 'modified', ...s });
  }
  const result = diffResult(baseSha, headSha, mb, files, patch.toString('utf8'));
  return cutPatches.has(patch) ? Object.assign(result, { patch_complete: false }) : result;
}

export function identityEnv(req: MergeCommitRequest): Record<string, string> {
  const when = `@${Math.floor((req.date ?? new Date()).getTime() / 1000)} +0000`;
  return {
    GIT_AUTHOR_NAME: req.author.name,
    GIT_AUTHOR_EMAIL: req.author.email,
    GIT_AUTHOR_DATE: when,
    GIT_COMMITTER_NAME: req.author.name,
    GIT_COMMITTER_EMAIL: req.author.email,
    GIT_COMMITTER_DATE: when,
  };
}

function assertNever(x: never): never {
  throw new Error(`unexpected merge shape ${String(x)}`);
}
