/**
 * `npm run bench -- git`: preview, diff and merge for each engine on a synthetic repo
 * (20k files, 2k commits, two branches of 50 commits), against the floor of raw git
 * plumbing doing the same work and against a Gitea-style temporary clone + `git merge`.
 */
import { spawn } from 'node:child_process';
import { access, mkdtemp, rename, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { createEngine, EngineUnavailableError, type EngineName } from '../../infra/git/engine.js';
import { runGit } from '../../lib/git-run.js';
import { SYSTEM_IDENTITY, type GitEngine } from '../../infra/git/port.js';
import { identityEnv } from '../../infra/git/engine-ort.js';
import { openProjectRepo } from '../../infra/git/open-repo.js';
import { median, timeRuns, type BenchRow, type BenchSuite } from '../types.js';

export interface Shape {
  files: number;
  commits: number;
  branchCommits: number;
}

const FULL: Shape = { files: 20_000, commits: 2_000, branchCommits: 50 };
const QUICK: Shape = { files: 2_000, commits: 200, branchCommits: 10 };

export const run: BenchSuite = async ({ quick }) => {
  const shape = quick ? QUICK : FULL;
  const repo = await syntheticRepo(shape);
  const base = await rev(repo, 'refs/heads/main');
  const head = await rev(repo, 'refs/heads/feature');
  const n = quick ? 7 : 21;
  const rows: BenchRow[] = [];
  const notes = `${shape.files} files, ${shape.commits} commits, branches of ${shape.branchCommits}; median of ${n}`;
  const date = new Date(1_700_500_000_000);

  // Floors: the same work as raw plumbing, called directly.
  const rawPreviewFn = () => runGit(['merge-tree', '--write-tree', '-z', '--name-only', base, head], { cwd: repo, okCodes: [0, 1] });
  // The floor for a diff: one `git diff --numstat -p base...head`.
  const rawDiffFn = () => runGit(['diff', '--no-renames', '--numstat', '-p', `${base}...${head}`], { cwd: repo });
  const rawMergeFn = async () => {
    const t = await runGit(['merge-tree', '--write-tree', '-z', base, head], { cwd: repo });
    const tree = t.stdout.toString('utf8').split('\0')[0]!;
    await runGit(['commit-tree', tree, '-p', base, '-p', head, '-m', 'bench'], {
      cwd: repo,
      env: identityEnv({ base_sha: base, head_sha: head, message: '', author: SYSTEM_IDENTITY, date }),
    });
  };
  const floors = { preview: [] as number[], diff: [] as number[], merge: [] as number[] };
  const previews: Array<[string, number]> = [];

  for (const name of ['git', 'libgit2'] as EngineName[]) {
    let engine: GitEngine;
    try {
      engine = await createEngine(name);
    } catch (e) {
      if (!(e instanceof EngineUnavailableError)) throw e;
      rows.push({ suite: 'git', name: `preview (${name} engine)`, value: NaN, unit: 'ms', notes: `not run: ${e.message}` });
      continue;
    }
    const label = name === 'git' ? 'merge-ort' : 'libgit2';
    const [rawPreview, preview] = await pair(n, rawPreviewFn, () => engine.preview(repo, base, head));
    const [rawDiff, diff] = await pair(n, rawDiffFn, () => engine.diff(repo, base, head));
    const [rawDiffCold, diffCold] = await pair(n, rawDiffFn, async () => (await createEngine(name)).diff(repo, base, head));
    const [rawMerge, merge] = await pair(n, rawMergeFn, () =>
      engine.createMerge(repo, { base_sha: base, head_sha: head, message: 'bench', author: SYSTEM_IDENTITY, date }),
    );
    if (name === 'git') {
      // A fresh engine per call: the first read of a (base, head) pair, merge-base not yet known.
      const [rawCold, cold] = await pair(n, rawPreviewFn, async () => (await createEngine('git')).preview(repo, base, head));
      rows.push({ suite: 'git', name: 'preview, first read of a pair (merge-ort)', value: cold, unit: 'ms', floor: rawCold, ratio: cold / rawCold, notes: 'merge-base and merge-tree in parallel' });
    }
    floors.preview.push(rawPreview);
    floors.diff.push(rawDiff);
    floors.merge.push(rawMerge);
    previews.push([label, preview]);
    const goal = 1.2;
    rows.push(
      { suite: 'git', name: `preview (${label} engine)`, value: preview, unit: 'ms', floor: rawPreview, ratio: preview / rawPreview, goal: `<= ${goal}x raw merge-tree`, met: preview <= goal * rawPreview, notes: name === 'git' ? `${notes}; repeat reads of a pair (merge-base cached)` : notes },
      { suite: 'git', name: `diff (${label} engine)`, value: diff, unit: 'ms', floor: rawDiff, ratio: diff / rawDiff, goal: '<= 1.5x raw diff', met: diff <= 1.5 * rawDiff, notes: `floor: one git diff --numstat -p base...head; repeat reads of a pair (merge base cached)` },
      { suite: 'git', name: `diff, first read of a pair (${label} engine)`, value: diffCold, unit: 'ms', floor: rawDiffCold, ratio: diffCold / rawDiffCold, goal: '<= 1.5x raw diff', met: diffCold <= 1.5 * rawDiffCold, notes: 'fresh engine: merge-base not yet known' },
      { suite: 'git', name: `merge (${label} engine)`, value: merge, unit: 'ms', floor: rawMerge, ratio: merge / rawMerge, notes: 'floor: merge-tree + commit-tree' },
    );
  }
  // A CR diff as the API computes it: live tips (ref files of the file:// remote), commits
  // ensured in the project's mirror, then the engine. Same repo, same raw floor.
  {
    const mirrors = await mkdtemp(path.join(tmpdir(), 'svc-bench-mirrors-'));
    try {
      const project = openProjectRepo({ location: { projectId: '00000000-0000-4000-8000-00000000d1ff', url: `file://${repo}` }, mirrorsDir: mirrors, engine: await createEngine('git') });
      await project.diffBranches('main', 'feature'); // the mirror's first fetch is not what is measured
      const [rawDiff, crDiff] = await pair(n, rawDiffFn, () => project.diffBranches('main', 'feature'));
      rows.push({ suite: 'git', name: 'CR diff via the project repo (tips + mirror + engine)', value: crDiff, unit: 'ms', floor: rawDiff, ratio: crDiff / rawDiff, goal: '<= 1.5x raw diff', met: crDiff <= 1.5 * rawDiff, notes: 'what GET .../diff does under HTTP and the row read; floor: one git diff --numstat -p base...head' });
    } finally {
      await rm(mirrors, { recursive: true, force: true });
    }
  }
  // Last: the temporary clones churn the page cache.
  const cloneRuns = quick ? 3 : 5;
  const tempClone = median(await timeRuns(cloneRuns, () => tempCloneMerge(repo, base, head), 1));
  for (const [label, preview] of previews) {
    rows.push({ suite: 'git', name: `temp-clone git merge vs preview (${label})`, value: tempClone, unit: 'ms', floor: preview, ratio: tempClone / preview, goal: '>= 20x slower than preview', met: tempClone >= 20 * preview, notes: `clone --shared, checkout, merge; median of ${cloneRuns}` });
  }
  rows.unshift(
    { suite: 'git', name: 'raw merge-tree --write-tree (floor)', value: median(floors.preview), unit: 'ms' },
    { suite: 'git', name: 'raw git diff --numstat -p base...head (floor)', value: median(floors.diff), unit: 'ms' },
    { suite: 'git', name: 'raw merge-tree + commit-tree (floor)', value: median(floors.merge), unit: 'ms' },
  );
  return rows;
};

/**
 * Times `a` and `b` alternately, so drift on a busy machine (page cache, other work)
 * hits both sides of a ratio alike. Returns the medians.
 */
async function pair(n: number, a: () => Promise<unknown>, b: () => Promise<unknown>): Promise<[number, number]> {
  const ta = await timeRuns(1, a, 2);
  const tb = await timeRuns(1, b, 2);
  for (let i = 1; i < n; i++) {
    ta.push(...(await timeRuns(1, a, 0)));
    tb.push(...(await timeRuns(1, b, 0)));
  }
  return [median(ta), median(tb)];
}

async function rev(repo: string, ref: string): Promise<string> {
  return (await runGit(['rev-parse', '--verify', ref], { cwd: repo })).stdout.toString('utf8').trim();
}

/** What Gitea does per merge: a shared temporary clone, a checkout, `git merge`. */
async function tempCloneMerge(repo: string, base: string, head: string): Promise<void> {
  const dir = await mkdtemp(path.join(tmpdir(), 'svc-bench-clone-'));
  try {
    const env = identityEnv({ base_sha: base, head_sha: head, message: '', author: SYSTEM_IDENTITY });
    await runGit(['clone', '--shared', '--quiet', '--no-checkout', '--', repo, dir]);
    await runGit(['checkout', '--quiet', '-b', 'merge-work', base], { cwd: dir });
    await runGit(['merge', '--quiet', '--no-ff', '--no-edit', '-m', 'bench', head], { cwd: dir, env });
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** Builds (or reuses from os.tmpdir()) the synthetic bare repository. */
export async function syntheticRepo(shape: Shape): Promise<string> {
  const final = path.join(tmpdir(), `svc-bench-git-${shape.files}-${shape.commits}-${shape.branchCommits}-v1.git`);
  try {
    await access(path.join(final, 'svc-bench-complete'));
    return final;
  } catch {
    // build it
  }
  const building = await mkdtemp(path.join(tmpdir(), 'svc-bench-build-'));
  const repo = path.join(building, 'repo.git');
  await runGit(['init', '--bare', '--quiet', '-b', 'main', repo]);
  await fastImport(repo, shape);
  await runGit(['gc', '--quiet'], { cwd: repo });
  await runGit(['hash-object', '-w', '--stdin'], { cwd: repo, input: 'ok' });
  const { writeFile } = await import('node:fs/promises');
  await writeFile(path.join(repo, 'svc-bench-complete'), new Date().toISOString());
  try {
    await rename(repo, final);
  } catch {
    // Another run built it first; use theirs.
  }
  await rm(building, { recursive: true, force: true });
  return final;
}

function fastImport(repo: string, s: Shape): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn('git', ['fast-import', '--quiet'], {
      cwd: repo,
      env: { PATH: process.env.PATH ?? '/usr/bin:/bin', GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null' },
      stdio: ['pipe', 'ignore', 'inherit'],
    });
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve() : reject(new Error(`git fast-import exited ${code}`))));
    let seed = 42;
    const rand = (max: number) => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff;
      return seed % max;
    };
    const filePath = (i: number) => `dir${i % 100}/sub${i % 7}/file${i}.txt`;
    const content = (i: number, v: number) =>
      `file ${i}\nversion ${v}\n${Array.from({ length: 12 }, (_, k) => `line ${k} of file ${i}`).join('\n')}\n`;
    const data = (text: string) => `data ${Buffer.byteLength(text)}\n${text}\n`;
    let time = 1_600_000_000;
    let mark = 0;
    const chunks: string[] = [];
    const flushIfBig = () => {
      if (chunks.length > 2000) child.stdin.write(chunks.splice(0).join(''));
    };
    const commit = (branch: string, msg: string, edits: Array<[number, number]>) => {
      mark++;
      chunks.push(`commit refs/heads/${branch}\nmark :${mark}\ncommitter Bench <bench@example.test> ${time++} +0000\n${data(msg)}`);
      for (const [i, v] of edits) chunks.push(`M 100644 inline ${filePath(i)}\n${data(content(i, v))}`);
      chunks.push('\n');
      flushIfBig();
    };
    commit('main', 'initial', Array.from({ length: s.files }, (_, i) => [i, 0]));
    for (let c = 1; c < s.commits; c++) commit('main', `trunk ${c}`, Array.from({ length: 5 }, () => [rand(s.files), c]));
    const fork = mark;
    const half = Math.floor(s.files / 2);
    // main edits the first half of the files, feature the second: a clean three-way merge.
    for (let c = 0; c < s.branchCommits; c++) commit('main', `main ${c}`, Array.from({ length: 3 }, () => [rand(half), 10_000 + c]));
    chunks.push(`reset refs/heads/feature\nfrom :${fork}\n\n`);
    for (let c = 0; c < s.branchCommits; c++) commit('feature', `feature ${c}`, Array.from({ length: 3 }, () => [half + rand(s.files - half), 20_000 + c]));
    child.stdin.end(chunks.join(''));
  });
}
