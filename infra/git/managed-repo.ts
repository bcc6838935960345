import { mkdir, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { DomainError, notFound } from '../../domain/errors.js';
import type { Logger } from '../../lib/logger.js';
import type { CommitFileRequest, DiffResult, GitEngine, MergeHooks, MergePreview, MergeRequest, MergeResult, ProjectRepo } from './port.js';
import { SYSTEM_IDENTITY } from './port.js';
import { assertBranchName, assertSha } from '../../domain/refs.js';
import { runGit } from '../../lib/git-run.js';
import { step } from '../../lib/step-trace.js';
import { headModified, refMoved } from './errors.js';
import { casBranch } from './ref-cas.js';
import { localRefReader, type LocalRefReader } from './local-refs.js';
import { pathToFileURL } from 'node:url';
import { exportTree, readFileAt, writeFileCommit } from './plumbing.js';

/**
 * The `managed` backend: a bare repository this service hosts at
 * `<repos dir>/<project_id>.git` and serves over smart HTTP (api/routes/git-http.ts).
 * Everything runs on the repository itself: tips are read from its ref files, diffs and
 * previews by the engine in place, and a merge writes its commit there and moves the base
 * with `update-ref <new> <old>` (compare-and-swap). No mirror, no network.
 */
const PROJECT_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export function managedRepoPath(reposDir: string, projectId: string): string {
  if (!PROJECT_ID.test(projectId)) throw new DomainError('validation', 'Validation failed', 'Invalid project id for a managed repository.');
  return path.join(path.resolve(reposDir), `${projectId}.git`);
}

/** `SVC_REPOS_DIR`, else `<data dir>/repos`. */
export function reposDirOf(config: { dataDir: string; SVC_REPOS_DIR?: string | undefined }): string {
  return path.resolve(config.SVC_REPOS_DIR ?? path.join(config.dataDir, 'repos'));
}

/**
 * Creates the bare repository (no template: no sample hooks; HEAD names the default
 * branch so a clone checks it out). `receive.fsckObjects` refuses corrupt objects in a
 * push. Idempotent: `git init` on an existing repository changes nothing.
 */
export async function createManagedRepo(repoPath: string, defaultBranch: string): Promise<void> {
  assertBranchName(defaultBranch, 'default_branch');
  await mkdir(path.dirname(repoPath), { recursive: true });
  await runGit(['init', '--bare', '--quiet', '--template=', `--initial-branch=${defaultBranch}`, '--', repoPath]);
  for (const [key, value] of [
    ['receive.fsckObjects', 'true'],
    ['uploadpack.allowFilter', 'true'],
    ['core.logAllRefUpdates', 'true'],
    ['gc.autoDetach', 'false'],
  ] as const) {
    await runGit(['config', key, value], { cwd: repoPath });
  }
}

export async function removeManagedRepo(repoPath: string): Promise<void> {
  await rm(repoPath, { recursive: true, force: true });
}

export async function managedRepoExists(repoPath: string): Promise<boolean> {
  const st = await stat(path.join(repoPath, 'objects')).catch(() => undefined);
  return !!st?.isDirectory();
}

export function openManagedRepo(opts: { repoPath: string; engine: GitEngine; logger?: Logger; projectId: string }): ProjectRepo {
  return new ManagedProjectRepo(opts.repoPath, opts.engine, opts.logger?.child({ component: 'git-managed', project_id: opts.projectId }));
}

class ManagedProjectRepo implements ProjectRepo {
  private readonly refs: LocalRefReader | null;

  constructor(
    private readonly dir: string,
    private readonly engine: GitEngine,
    private readonly log: Logger | undefined,
  ) {
    this.refs = localRefReader(pathToFileURL(dir).href);
  }

  async readTips(branches: string[]): Promise<Record<string, string | null>> {
    const names = [...new Set(branches.map((b) => assertBranchName(b)))];
    if (names.length === 0) return {};
    const fast = this.refs ? await this.refs.readTips(names) : null;
    if (fast) return fast;
    const tips: Record<string, string | null> = {};
    for (const n of names) tips[n] = await this.engine.resolveBranch(this.dir, n);
    return tips;
  }

  async diffBranches(baseRef: string, headRef: string): Promise<DiffResult> {
    const { base, head } = await this.liveTips(baseRef, headRef);
    return this.engine.diff(this.dir, base, head);
  }

  async diffCommits(baseSha: string, headSha: string): Promise<DiffResult> {
    assertSha(baseSha, 'base_sha');
    assertSha(headSha, 'head_sha');
    if (!(await this.hasCommits([baseSha, headSha]))) throw notFound('Commit');
    return this.engine.diff(this.dir, baseSha, headSha);
  }

  async preview(baseRef: string, headRef: string): Promise<MergePreview> {
    const { base, head } = await this.liveTips(baseRef, headRef);
    return this.engine.preview(this.dir, base, head);
  }

  async branchContains(branch: string, sha: string): Promise<boolean> {
    assertSha(sha);
    const tip = (await this.readTips([assertBranchName(branch)]))[branch] ?? null;
    if (tip === null) return false;
    if (tip === sha) return true;
    if (!(await this.hasCommits([sha]))) return false;
    return this.engine.isAncestor(this.dir, sha, tip);
  }

  async merge(req: MergeRequest, hooks: MergeHooks = {}): Promise<MergeResult> {
    const baseRef = assertBranchName(req.base_ref, 'base_ref');
    const headRef = assertBranchName(req.head_ref, 'head_ref');
    if (req.expected_head_sha !== undefined) assertSha(req.expected_head_sha, 'expected_head_sha');
    const { base, head } = await this.liveTips(baseRef, headRef);
    step('git: read tips');
    if (req.expected_head_sha !== undefined && req.expected_head_sha !== head) throw headModified(req.expected_head_sha, head);
    const result = await this.engine.createMerge(this.dir, { base_sha: base, head_sha: head, message: req.message, author: SYSTEM_IDENTITY });
    await hooks.beforePublish?.(result);
    // update-ref runs no hooks: the CR-only rule guards pushes, and this is the CR merge.
    if (result.kind !== 'up-to-date') await this.moveBranch(baseRef, result.merge_commit_sha, base);
    step('git: update-ref');
    this.log?.info({ base_ref: baseRef, head_ref: headRef, kind: result.kind, sha: result.merge_commit_sha }, 'merged');
    return result;
  }

  async createBranch(branch: string, fromRef: string): Promise<string> {
    assertBranchName(branch, 'branch');
    assertBranchName(fromRef, 'base_ref');
    const tips = await this.readTips([fromRef, branch]);
    const from = tips[fromRef] ?? null;
    if (from === null) throw notFound(`Branch '${fromRef}'`);
    if (tips[branch] !== null) throw new DomainError('conflict', 'Conflict', `Branch '${branch}' already exists.`);
    await this.engine.updateBranch(this.dir, branch, from, null);
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
    await this.engine.updateBranch(this.dir, req.branch, sha, null);
    return sha;
  }

  async exportTree(sha: string, dest: string): Promise<void> {
    if (!(await this.hasCommits([assertSha(sha)]))) throw notFound('Commit');
    await exportTree(this.dir, sha, dest);
  }

  /** Compare-and-swap of the branch, without a git process where ./ref-cas.ts is certain to act as git would. */
  private async moveBranch(branch: string, next: string, expectedOld: string): Promise<void> {
    const cas = casBranch(this.refs, this.dir, branch, next, expectedOld, { message: 'svc: update branch' });
    if (cas === 'stale') throw refMoved(`refs/heads/${branch}`);
    if (cas === null) await this.engine.updateBranch(this.dir, branch, next, expectedOld);
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

  private async hasCommits(shas: string[]): Promise<boolean> {
    const r = await runGit(['cat-file', '--batch-check=%(objectname) %(objecttype)'], {
      cwd: this.dir,
      input: shas.map((sha) => `${assertSha(sha)}^{commit}\n`).join(''),
    });
    const lines = r.stdout.toString('utf8').split('\n').filter(Boolean);
    return lines.length === shas.length && lines.every((l) => l.endsWith(' commit'));
  }
}
