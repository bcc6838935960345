import { spawnChild } from '../../lib/spawn.js';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { notFound, validationError } from '../../domain/errors.js';
import { isRepoPath } from '../../domain/repo-path.js';
import type { CommitFileRequest } from './port.js';
import { assertBranchName, assertSha } from '../../domain/refs.js';
import { runGit } from '../../lib/git-run.js';
import { systemClock } from '../../lib/clock.js';

/**
 * Reading a file at a commit, writing a one-file commit and exporting a tree, on a bare
 * repository, with plumbing only. Paths are checked here: relative, no `..`, no control
 * characters, so they can neither become an option nor leave the tree.
 */
export function assertRepoPath(p: string): string {
  if (!isRepoPath(p)) {
    throw validationError(`'${p}' is not a path inside the repository.`, [{ path: 'path', message: 'invalid repository path' }]);
  }
  return p;
}

export async function readFileAt(repoPath: string, sha: string, file: string): Promise<Buffer | null> {
  assertSha(sha);
  assertRepoPath(file);
  // `--batch` answers `<sha> <type> <size>\n<bytes>\n`, or `<name> missing\n`: machine output.
  const r = await runGit(['cat-file', '--batch'], { cwd: repoPath, input: `${sha}:${file}\n` });
  const out = r.stdout;
  const nl = out.indexOf(0x0a);
  const header = out.subarray(0, nl).toString('utf8').split(' ');
  if (header.length !== 3 || header[1] !== 'blob') return null;
  const size = Number(header[2]);
  return out.subarray(nl + 1, nl + 1 + size);
}

export async function writeFileCommit(repoPath: string, req: CommitFileRequest, date = systemClock.now()): Promise<string> {
  const from = assertSha(req.fromSha, 'fromSha');
  const file = assertRepoPath(req.path);
  const dir = await mkdtemp(path.join(os.tmpdir(), 'svc-index-'));
  const ident = {
    GIT_AUTHOR_NAME: req.author.name,
    GIT_AUTHOR_EMAIL: req.author.email,
    GIT_COMMITTER_NAME: req.author.name,
    GIT_COMMITTER_EMAIL: req.author.email,
    GIT_AUTHOR_DATE: date.toISOString(),
    GIT_COMMITTER_DATE: date.toISOString(),
  };
  try {
    const env = { GIT_INDEX_FILE: path.join(dir, 'index') };
    const blob = (await runGit(['hash-object', '-w', '--stdin'], { cwd: repoPath, input: req.content })).stdout.toString('utf8').trim();
    const ls = (await runGit(['ls-tree', '-z', from, '--', file], { cwd: repoPath })).stdout.toString('utf8');
    const mode = /^(100644|100755) blob /.exec(ls)?.[1] ?? '100644';
    await runGit(['read-tree', `${from}^{tree}`], { cwd: repoPath, env });
    await runGit(['update-index', '--add', '--cacheinfo', `${mode},${blob},${file}`], { cwd: repoPath, env });
    const tree = (await runGit(['write-tree'], { cwd: repoPath, env })).stdout.toString('utf8').trim();
    const commit = await runGit(['commit-tree', tree, '-p', from, '-F', '-'], { cwd: repoPath, env: ident, input: req.message });
    return commit.stdout.toString('utf8').trim();
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** `git archive <sha> | tar -x -C dest`. */
export async function exportTree(repoPath: string, sha: string, dest: string): Promise<void> {
  assertSha(sha);
  const tarball = (await runGit(['archive', '--format=tar', sha], { cwd: repoPath })).stdout;
  await new Promise<void>((resolve, reject) => {
    const tar = spawnChild('tar', 'tar', ['-x', '-f', '-', '-C', dest, '--no-same-owner'], { stdio: ['pipe', 'ignore', 'pipe'] }, reject);
    if (!tar.stdin || !tar.stderr) return; // never started: rejected by the listener
    let err = '';
    tar.stderr.on('data', (b: Buffer) => (err += b.toString()));
    tar.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`tar exited ${code}: ${err.slice(0, 500)}`))));
    tar.stdin.on('error', () => {}); // tar exiting early is told by its exit code
    tar.stdin.end(tarball);
  });
}

/**
 * The live tips of a CR's two branches, read in one call of the repository's `readTips`;
 * names are checked before any git runs, and a missing branch is 404 naming it.
 */
export async function requireLiveTips(
  readTips: (branches: string[]) => Promise<Record<string, string | null>>,
  baseRef: string,
  headRef: string,
): Promise<{ base: string; head: string }> {
  assertBranchName(baseRef, 'base_ref');
  assertBranchName(headRef, 'head_ref');
  const tips = await readTips([baseRef, headRef]);
  const base = tips[baseRef] ?? null;
  const head = tips[headRef] ?? null;
  if (base === null) throw notFound(`Branch '${baseRef}'`);
  if (head === null) throw notFound(`Branch '${headRef}'`);
  return { base, head };
}
