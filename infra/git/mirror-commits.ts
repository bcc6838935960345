import { DomainError, isDomainError } from '../../domain/errors.js';
import { assertSha } from '../../domain/refs.js';
import { runGit } from '../../lib/git-run.js';
import type { MirrorState } from './mirror.js';
import { jittered } from '../../lib/backoff.js';

/**
 * Which commits a remote's mirror holds, and getting the ones it lacks. Commits are
 * immutable and tips are always read live, so a mirror holding them can serve any answer
 * about them: no fetch when they are there already; otherwise join the fetch in flight or
 * start one (a joined fetch may predate the tips read, hence a second round). Commits seen
 * there stay (no gc; refs are only pruned), so they are remembered and not checked again.
 */
export class MirrorCommits {
  /** Commits known to be in the mirror, oldest first (bounded). */
  private readonly known = new Set<string>();

  constructor(
    private readonly mirror: MirrorState,
    private readonly fetchAll: () => Promise<void>,
  ) {}

  has(sha: string): boolean {
    return this.known.has(sha);
  }

  /**
   * A read (diff, preview) on commits that must be in the mirror. The mirror is a cache
   * that may be deleted: if the read fails on commits taken as known, they are checked
   * (and fetched) again and the read is retried once.
   */
  async withCommits<T>(shas: string[], missing: () => Error, read: () => Promise<T>): Promise<T> {
    if (shas.every((sha) => this.known.has(sha))) {
      try {
        return await read();
      } catch (err) {
        if (err instanceof DomainError) throw err; // an answer about the commits, not a missing object
        for (const sha of shas) this.known.delete(sha);
        this.mirror.recheck();
      }
    }
    await this.ensure(shas, missing);
    return read();
  }

  async ensure(shas: string[], missing: () => Error): Promise<void> {
    await this.mirror.ensureCreated();
    for (let round = 0; round < 2; round++) {
      if (await this.present(shas)) return this.remember(shas);
      try {
        await this.mirror.fetch(this.fetchAll);
      } catch (err) {
        // Another process (a second worker, the API) may be fetching into the same mirror
        // and holding its ref locks: look again after a moment, then fetch once more.
        if (round === 1 || !isDomainError(err) || err.code !== 'unavailable') throw err;
        await new Promise((r) => setTimeout(r, jittered(125, 0.6)));
      }
    }
    if (!(await this.present(shas))) throw missing();
    this.remember(shas);
  }

  remember(shas: string[]): void {
    for (const sha of shas) {
      this.known.delete(sha);
      this.known.add(sha);
    }
    while (this.known.size > 4096) this.known.delete(this.known.values().next().value!);
  }

  /** One `cat-file --batch-check` for all of them (machine output: `<sha> commit <size>`). */
  async present(shas: string[]): Promise<boolean> {
    const r = await runGit(['cat-file', '--batch-check=%(objectname) %(objecttype)'], {
      cwd: this.mirror.path,
      input: shas.map((sha) => `${assertSha(sha)}^{commit}\n`).join(''),
    });
    const lines = r.stdout.toString('utf8').split('\n').filter(Boolean);
    return lines.length === shas.length && lines.every((l) => l.endsWith(' commit'));
  }
}
