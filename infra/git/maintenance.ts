import { readdir } from 'node:fs/promises';
import path from 'node:path';
import { runGit } from '../../lib/git-run.js';
import type { Logger } from '../../lib/logger.js';

/**
 * Maintenance of the repositories the server keeps (managed repositories and mirrors):
 * without it a busy repository holds one loose object per pushed object and one loose ref
 * file per branch, and every fetch's ref advertisement and object lookup slows as they
 * grow. Everything here is git's own concurrent-safe maintenance, run while reads, pushes
 * and merges go on: new packs are written before old ones go, `pack-refs` writes
 * `packed-refs` before it deletes a loose ref (under that ref's lock, which a merge's
 * compare-and-swap also takes: ./ref-cas.ts), and readers of either retry or never miss a
 * ref (./local-refs.ts).
 *
 * - `light` (when a repository grew, and on the schedule): `pack-refs --all --prune`,
 *   then a geometric repack that packs the loose objects and rolls small packs into
 *   bigger ones, its cost proportional to what is new (`repack -d --geometric=2`).
 * - `full` (on the schedule, rarely): everything into one pack, objects unreachable for
 *   longer than the grace period dropped and younger ones kept in a cruft pack
 *   (`repack -d --cruft --cruft-expiration=<grace>`), so a push in flight never loses
 *   an object it just sent.
 */
export type MaintenanceKind = 'light' | 'full';

export interface MaintenanceResult {
  kind: MaintenanceKind;
  ms: number;
}

export async function maintainRepository(gitDir: string, kind: MaintenanceKind, opts: { graceDays?: number; timeoutMs?: number } = {}): Promise<MaintenanceResult> {
  const started = performance.now();
  const run = (args: string[]) => runGit(args, { cwd: gitDir, timeoutMs: opts.timeoutMs ?? 30 * 60_000 });
  await run(['pack-refs', '--all', '--prune']);
  if (kind === 'light') {
    await run(['repack', '-d', '-q', '--geometric=2', '--no-write-bitmap-index']);
  } else {
    const grace = `${Math.max(0, Math.floor(opts.graceDays ?? 14))}.days.ago`;
    await run(['repack', '-d', '-q', '--cruft', `--cruft-expiration=${grace}`, '--no-write-bitmap-index']);
  }
  return { kind, ms: performance.now() - started };
}

/**
 * Whether a repository has grown enough since its last pass to be worth a light one, read
 * from the disk without git, as `git gc --auto` estimates: loose objects from one fan-out
 * directory (`objects/17` holds ~1/256 of them), the number of packs, and loose branch
 * ref files (counted up to the limit).
 */
export async function needsMaintenance(gitDir: string, limits: { looseObjects?: number; packs?: number; looseRefs?: number } = {}): Promise<boolean> {
  const sample = (await readdir(path.join(gitDir, 'objects', '17')).catch(() => [] as string[])).length;
  if (sample * 256 >= (limits.looseObjects ?? 512)) return true;
  const packs = (await readdir(path.join(gitDir, 'objects', 'pack')).catch(() => [] as string[])).filter((f) => f.endsWith('.pack')).length;
  if (packs >= (limits.packs ?? 16)) return true;
  return (await countFiles(path.join(gitDir, 'refs', 'heads'), limits.looseRefs ?? 100)) >= (limits.looseRefs ?? 100);
}

async function countFiles(dir: string, limit: number): Promise<number> {
  let n = 0;
  const stack = [dir];
  while (stack.length > 0 && n < limit) {
    const here = stack.pop()!;
    const entries = await readdir(here, { withFileTypes: true }).catch(() => []);
    for (const e of entries) {
      if (e.isDirectory()) stack.push(path.join(here, e.name));
      else n++;
    }
  }
  return n;
}

export interface RepoMaintainerOptions {
  /** The repositories to look after (managed repositories and mirrors). */
  repositories: () => Promise<string[]>;
  /** A light pass at least this often even without growth (ms). Default 6 h. */
  lightEveryMs?: number;
  /** A full pass this often (ms). Default 24 h. */
  fullEveryMs?: number;
  /** What counts as grown (needsMaintenance's defaults when absent). */
  limits?: { looseObjects?: number; packs?: number; looseRefs?: number };
  graceDays?: number;
  logger?: Logger | undefined;
}

/**
 * The maintenance of one process's repositories: `tick` looks at each repository and runs
 * a pass where one is due, one repository at a time; workers/repository-maintenance.ts
 * calls it every `checkEveryMs`, so a burst of pushes is packed within about a minute and
 * reads, pushes and merges never wait for it. A request to maintain a repository being
 * maintained joins the pass in flight.
 */
export class RepoMaintainer {
  private readonly running = new Map<string, Promise<MaintenanceResult | null>>();
  private readonly last = new Map<string, { light: number; full: number }>();
  private ticking: Promise<void> | null = null;
  private readonly started = performance.now();

  constructor(private readonly o: RepoMaintainerOptions) {}

  /** One pass on `gitDir` (joins the one in flight). Failures are logged, never thrown. */
  maintain(gitDir: string, kind: MaintenanceKind): Promise<MaintenanceResult | null> {
    const inflight = this.running.get(gitDir);
    if (inflight) return inflight;
    const p = maintainRepository(gitDir, kind, this.o.graceDays !== undefined ? { graceDays: this.o.graceDays } : {})
      .then((r) => {
        const now = performance.now();
        const seen = this.last.get(gitDir) ?? { light: this.started, full: this.started };
        this.last.set(gitDir, { light: now, full: kind === 'full' ? now : seen.full });
        this.o.logger?.info({ repo: path.basename(gitDir), kind, ms: r.ms }, 'repository maintained');
        return r;
      })
      .catch((err: unknown) => {
        this.o.logger?.warn({ repo: path.basename(gitDir), kind, err: (err as Error).message }, 'repository maintenance failed');
        return null;
      })
      .finally(() => this.running.delete(gitDir));
    this.running.set(gitDir, p);
    return p;
  }

  /** Every repository once: the pass that is due for each, if any. */
  tick(): Promise<void> {
    this.ticking ??= (async () => {
      for (const dir of await this.o.repositories()) {
        const seen = this.last.get(dir) ?? { light: this.started, full: this.started };
        const now = performance.now();
        if (now - seen.full >= (this.o.fullEveryMs ?? 24 * 3_600_000)) await this.maintain(dir, 'full');
        else if (now - seen.light >= (this.o.lightEveryMs ?? 6 * 3_600_000) || (await needsMaintenance(dir, this.o.limits))) await this.maintain(dir, 'light');
      }
    })().finally(() => (this.ticking = null));
    return this.ticking;
  }

  /** Resolves once the tick and every pass in flight ended. */
  async drain(): Promise<void> {
    await Promise.all([this.ticking, ...this.running.values()]);
  }
}

/** The bare repositories (`*.git` directories, not views) directly under each of `dirs`. */
export async function bareRepositoriesUnder(...dirs: string[]): Promise<string[]> {
  const out: string[] = [];
  for (const dir of dirs) {
    const entries = await readdir(dir, { withFileTypes: true }).catch(() => []);
    for (const e of entries) if (e.isDirectory() && e.name.endsWith('.git') && !e.name.endsWith('.view.git')) out.push(path.join(dir, e.name));
  }
  return out;
}
