import type { DiffFile, DiffResult, FileStatus, GitEngine, MergeCommitRequest, MergePreview, MergeResult } from './port.js';
import { assertBranchName, assertSha } from '../../domain/refs.js';
import { runGit, type GitResult } from '../../lib/git-run.js';
import { isGitCommandError } from '../../lib/git-run.js';
import { mergeFailed, refMoved, unrelatedHistories } from './errors.js';
import { diffResult } from './diff-result.js';
import { writeMergeCommit } from './commit-object.js';
import { step } from '../../lib/step-trace.js';
import { systemClock } from '../../lib/clock.js';

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
    // One git process for files, statuses, counts and patch (`--raw --numstat -p -z`).
    // A known merge base (commits are immutable) makes it `diff <mb> <head>`, which is
    // what `base...head` means, without git finding the base again; on the first read of
    // a pair, merge-base runs beside `base...head` and is remembered for the next one.
    const known = this.mergeBases.get(`${repoPath}\0${baseSha}\0${headSha}`);
    if (known !== undefined) {
      const from = known === null ? await emptyTree(repoPath) : known;
      return withoutHugeFiles(repoPath, parseCombinedDiff(baseSha, headSha, known, (await diffOnce(repoPath, from, headSha))!), [from, headSha]);
    }
    const range = `${baseSha}...${headSha}`;
    const [mb, out] = await Promise.all([this.mergeBase(repoPath, baseSha, headSha), diffOnce(repoPath, range)]);
    if (mb === null) {
      // No merge base: everything on head is new, so diff from the empty tree.
      const empty = await emptyTree(repoPath);
      return withoutHugeFiles(repoPath, parseCombinedDiff(baseSha, headSha, null, (await diffOnce(repoPath, empty, headSha))!), [empty, headSha]);
    }
    return withoutHugeFiles(repoPath, parseCombinedDiff(baseSha, headSha, mb, out!), [range]);
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
    // As in preview: merge-tree runs beside merge-base unless the merge base is known, so
    // a merge commit waits for one process before commit-tree, not two; its result is
    // dropped when no merge commit is needed.
    const cached = this.mergeBases.has(`${repoPath}\0${base}\0${head}`);
    const early = cached ? null : mergeTree(repoPath, base, head).catch((e: unknown) => e as Error);
    const mb = await this.mergeBase(repoPath, base, head);
    step('git: merge-base');
    const c = classify(base, head, mb);
    switch (c.kind) {
      case 'unrelated':
        throw unrelatedHistories();
      case 'up-to-date':
        return { kind: 'up-to-date', base_sha: base, head_sha: head, merge_commit_sha: base };
      case 'fast-forward':
        return { kind: 'fast-forward', base_sha: base, head_sha: head, merge_commit_sha: head };
      case 'three-way': {
        const t = early ? await early : await mergeTree(repoPath, base, head);
        if (t instanceof Error) throw t;
        step('git: merge-tree');
        if (!t.clean) throw mergeFailed(t.conflicts);
        const message = req.message.endsWith('\n') ? req.message : `${req.message}\n`;
        const epochSeconds = Math.floor((req.date ?? systemClock.now()).getTime() / 1000);
        // The commit-tree object, written here when that is certain to be the same bytes.
        const written = writeMergeCommit(repoPath, { tree: t.tree, parents: [base, head], author: req.author, epochSeconds, message });
        const sha =
          written ??
          (
            await runGit(['commit-tree', t.tree, '-p', base, '-p', head, '-F', '-'], {
              cwd: repoPath,
              input: message,
              env: identityEnv({ ...req, date: new Date(epochSeconds * 1000) }),
            })
          ).stdout
            .toString('utf8')
            .trim();
        step('git: commit object');
        return { kind: 'merge-commit', base_sha: base, head_sha: head, merge_commit_sha: sha };
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

/** The most diff output read from git for one diff: memory stays bounded (the API's limits cut further). */
export const PATCH_READ_CAP = 32 * 1024 * 1024;
/** Outputs that hit PATCH_READ_CAP (the patch's last file section is partial; stats come first and are whole). */
const cutPatches = new WeakSet<Buffer>();

async function diffOnce(repoPath: string, ...revs: string[]): Promise<Buffer | null> {
  // With unrelated histories `a...b` has no merge base and git fails: that is decided
  // by the merge-base call running beside this one, so a failure here is only used then.
  try {
    const r = await runGit(['diff', ...DIFF_FLAGS, '--raw', '--numstat', '--patch', '-z', '--end-of-options', ...revs, '--'], {
      cwd: repoPath,
      maxStdoutBytes: PATCH_READ_CAP,
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
 * The output hit PATCH_READ_CAP (a huge generated file, typically): read the patch again
 * without the files whose stats say they are huge, so the files after them keep theirs.
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

/**
 * Parses `git diff --no-renames --raw --numstat --patch -z`: one raw record per file
 * (`:<modes> <shas> <status>\0<path>\0`), then one numstat record per file in the same
 * order (`<added>\t<deleted>\t<path>\0`, `-\t-` for binary), then a NUL, then the patch.
 * Paths are taken from the raw records (verbatim bytes with -z, tabs and all).
 */
export function parseCombinedDiff(baseSha: string, headSha: string, mb: string | null, out: Buffer): DiffResult {
  let pos = 0;
  const field = (): string => {
    const end = out.indexOf(0, pos);
    if (end < 0) throw new Error('git diff: truncated -z output');
    const s = out.toString('utf8', pos, end);
    pos = end + 1;
    return s;
  };
  const raw: { path: string; status: FileStatus }[] = [];
  while (pos < out.length && out[pos] === 0x3a /* ':' */) {
    const meta = field();
    const path = field();
    const letter = meta.slice(meta.lastIndexOf(' ') + 1).charAt(0);
    raw.push({ path, status: STATUS[letter] ?? 'modified' });
  }
  const files: DiffFile[] = raw.map(({ path, status }) => {
    const rec = field();
    const t1 = rec.indexOf('\t');
    const t2 = rec.indexOf('\t', t1 + 1);
    const a = rec.slice(0, t1);
    const d = rec.slice(t1 + 1, t2);
    const binary = a === '-' && d === '-';
    return { path, status, additions: binary ? 0 : Number(a), deletions: binary ? 0 : Number(d), binary };
  });
  if (pos < out.length && out[pos] === 0) pos++; // the separator before the patch
  const result = diffResult(baseSha, headSha, mb, files, out.toString('utf8', pos));
  return cutPatches.has(out) ? Object.assign(result, { patch_complete: false }) : result;
}

export function identityEnv(req: MergeCommitRequest): Record<string, string> {
  const when = `@${Math.floor((req.date ?? systemClock.now()).getTime() / 1000)} +0000`;
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
