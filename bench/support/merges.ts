/**
 * Merge end to end (`POST .../merge` until its 200), for one kind of project repository,
 * beside the raw plumbing of one merge on the same kind of repository in the same run:
 *
 * - `local`: a hook-less bare repository on this machine (`file://`), published in place
 *   (`update-ref` compare-and-swap). Floor: merge-tree --write-tree + commit-tree + update-ref.
 * - `managed`: a repository this server hosts (`SVC_REPOS_DIR`, created through the API).
 *   Same floor.
 * - `remote`: a bare repository behind `git http-backend` (smart HTTP, Basic auth), read
 *   with `ls-remote` and fetched into the mirror, published by a push with lease. Floor:
 *   merge-tree + commit-tree in a clone + push to a copy of the remote over the same HTTP.
 *   With `previewFirst`, each CR's merge preview is read before its merge: the mirror then
 *   holds both branches and the merge is made on them with no fetch.
 *
 * Each merge's steps are traced (lib/step-trace.ts); the notes carry the median of each.
 */
import { performance } from 'node:perf_hooks';
import path from 'node:path';
import { runGit } from '../../lib/git-run.js';
import { identityEnv } from '../../infra/git/engine-ort.js';
import { SYSTEM_IDENTITY } from '../../infra/git/port.js';
import { onTrace, stepDurations, type StepTrace } from '../../lib/step-trace.js';
import { median, percentile, type BenchRow } from '../types.js';
import type { BenchRepo } from './git-fixture.js';

export type RepoKind = 'local' | 'managed' | 'remote';

export type ApiJson = <T>(method: string, urlPath: string, body: unknown, expect: number) => Promise<T>;

export interface MergeTarget {
  kind: RepoKind;
  /** What the row names the repository. */
  label: string;
  /** Where branches are pushed (the project's repository, or the remote behind it). */
  repo: BenchRepo;
  /** The project's base path, `/v1/projects/<id>/change-requests`. */
  crs: string;
  /** The floor's push target when the kind pushes: a URL serving `<repo.root>/<floorTarget>`. */
  floorPushUrl?: string;
  /** Where in `repo.root` the floor's copies go (distinct per row set on one repository). */
  floorTarget?: string;
  /**
   * Each CR's merge preview is read (untimed) before its merge, as a reviewer or an agent
   * checking mergeability would: the mirror of a remote then holds both branches.
   */
  previewFirst?: boolean;
}

interface Cr {
  number: number;
  merge_commit_sha: string | null;
  status: string;
}

const GOAL_P50: Record<RepoKind, number> = { local: 40, managed: 40, remote: 60 };
const GOAL_P99 = 120;

/** Sequential merges, fast-forwards and merge commits alternating; then the floor; two rows. */
export async function mergeRows(api: ApiJson, t: MergeTarget, merges: number, floorRuns: number): Promise<BenchRow[]> {
  const tag = t.previewFirst ? 'pv-' : '';
  const mcBranches = Array.from({ length: Math.ceil(merges / 2) }, (_, i) => `${tag}mc-${i}`);
  const floorBranches = Array.from({ length: floorRuns + 2 }, (_, i) => `${tag}floor-${i}`);
  await t.repo.branches([...mcBranches, ...floorBranches], 'main');
  const traces: StepTrace[] = [];
  const stop = onTrace((tr) => {
    if (tr.name === 'merge') traces.push(tr);
  });
  const wall: number[] = [];
  const steps = new Map<string, number[]>();
  let ff = 0;
  let mergeCommits = 0;
  try {
    for (let i = 0; i < merges; i++) {
      let head: string;
      if (i % 2 === 0) {
        head = `${tag}ff-${i}`;
        await t.repo.commit(head, { [`ff/${tag}${i}.txt`]: `fast-forward ${tag}${i}\n` }, 'main');
      } else {
        head = mcBranches[(i - 1) / 2]!;
      }
      const cr = (await api<{ change_request: Cr }>('POST', t.crs, { title: `Bench ${head}`, head_ref: head, base_ref: 'main' }, 201)).change_request;
      if (t.previewFirst) await api('GET', `${t.crs}/${cr.number}/merge-preview`, undefined, 200);
      traces.length = 0;
      const t0 = performance.now();
      const merged = (await api<{ change_request: Cr }>('POST', `${t.crs}/${cr.number}/merge`, {}, 200)).change_request;
      const t1 = performance.now();
      wall.push(t1 - t0);
      if (merged.status !== 'merged' || !merged.merge_commit_sha) throw new Error(`merge of ${head} did not merge`);
      const parents = (await t.repo.bareGit(['rev-list', '--parents', '-n', '1', merged.merge_commit_sha])).split(' ').length - 1;
      if (parents === 2) mergeCommits++;
      else ff++;
      const tr = traces[0];
      if (tr && i >= 2) {
        const add = (k: string, v: number) => steps.set(k, [...(steps.get(k) ?? []), v]);
        add('HTTP in + auth', tr.start - t0);
        for (const [k, v] of stepDurations(tr)) add(k, v);
        add('answer out', t1 - tr.steps[tr.steps.length - 1]!.at);
      }
    }
  } finally {
    stop();
  }
  const floorMs = t.kind === 'remote' ? await pushFloor(t, floorBranches, floorRuns) : await inPlaceFloor(t.repo, floorBranches, floorRuns);
  const timed = wall.slice(2); // the first two: mirror creation, first fetch, cold caches
  const p50 = percentile(timed, 50);
  const p99 = percentile(timed, 99);
  const floor = median(floorMs);
  const breakdown = [...steps].map(([k, v]) => `${k} ${median(v).toFixed(1)}`).join(', ');
  const floorText =
    t.kind === 'remote'
      ? 'merge-tree --write-tree + commit-tree + push (same HTTP remote)'
      : 'merge-tree --write-tree + commit-tree + update-ref (same kind of repository)';
  return [
    {
      suite: 'api',
      name: `merge end to end p50 (HTTP, ${t.label})`,
      value: p50,
      unit: 'ms',
      floor,
      ratio: p50 / floor,
      goal: `<= ${GOAL_P50[t.kind]} ms`,
      met: p50 <= GOAL_P50[t.kind],
      notes: `${t.previewFirst ? 'each CR previewed (untimed) before its merge; ' : ''}${timed.length} sequential merges timed (${ff} fast-forward, ${mergeCommits} merge commits in all ${merges}); first 2 excluded; floor: ${floorText}, median of ${floorRuns}; median ms per step: ${breakdown}`,
    },
    {
      suite: 'api',
      name: `merge end to end p99 (HTTP, ${t.label})`,
      value: p99,
      unit: 'ms',
      floor,
      ratio: p99 / floor,
      goal: `<= ${GOAL_P99} ms`,
      met: p99 <= GOAL_P99,
      notes: `max ${Math.max(...timed).toFixed(1)} ms; first two ${wall.slice(0, 2).map((m) => m.toFixed(0)).join('/')} ms`,
    },
  ];
}

const since = (t: number) => performance.now() - t;

/** merge-tree + commit-tree (a merge commit every time) + update-ref, in a bare copy of the repository. */
async function inPlaceFloor(repo: BenchRepo, branches: string[], runs: number): Promise<number[]> {
  const copy = path.join(repo.root, 'floor-copy.git');
  await runGit(['clone', '--bare', '--quiet', '--', repo.bare, copy]);
  return timeFloor(copy, branches, runs, (commit, base) => runGit(['update-ref', '-m', 'floor', '--', 'refs/heads/main', commit, base], { cwd: copy }));
}

/** merge-tree + commit-tree in a bare clone, then a push to a copy of the remote (served beside it). */
async function pushFloor(t: MergeTarget, branches: string[], runs: number): Promise<number[]> {
  const target = t.floorTarget ?? 'floor-target.git';
  const mirror = path.join(t.repo.root, `mirror-of-${target}`);
  await runGit(['clone', '--bare', '--quiet', '--', t.repo.bare, mirror]);
  await runGit(['clone', '--bare', '--quiet', '--', t.repo.bare, path.join(t.repo.root, target)]);
  return timeFloor(mirror, branches, runs, (commit) =>
    runGit(['push', '--quiet', '--porcelain', '--end-of-options', t.floorPushUrl!, `${commit}:refs/heads/main`], { cwd: mirror }),
  );
}

/** `runs` merges of `branches` into main in `dir`, each published by `publish`; the first two untimed. */
async function timeFloor(dir: string, branches: string[], runs: number, publish: (commit: string, base: string) => Promise<unknown>): Promise<number[]> {
  let base = (await runGit(['rev-parse', 'refs/heads/main'], { cwd: dir })).stdout.toString().trim();
  const out: number[] = [];
  for (let i = 0; i < runs + 2; i++) {
    const head = (await runGit(['rev-parse', `refs/heads/${branches[i]!}`], { cwd: dir })).stdout.toString().trim();
    const t = performance.now();
    const commit = await commitMerge(dir, base, head, i);
    await publish(commit, base);
    if (i >= 2) out.push(since(t));
    base = commit;
  }
  return out;
}

async function commitMerge(dir: string, base: string, head: string, i: number): Promise<string> {
  const tree = (await runGit(['merge-tree', '--write-tree', '-z', base, head], { cwd: dir })).stdout.toString('utf8').split('\0')[0]!;
  const env = identityEnv({ base_sha: base, head_sha: head, message: '', author: SYSTEM_IDENTITY });
  return (await runGit(['commit-tree', tree, '-p', base, '-p', head, '-m', `floor ${i}`], { cwd: dir, env })).stdout.toString().trim();
}
