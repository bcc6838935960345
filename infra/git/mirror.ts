import { existsSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { DomainError } from '../../domain/errors.js';
import { runGit } from '../../lib/git-run.js';

/**
 * Bookkeeping for the bare mirrors of one process: which fetch is in flight for a
 * mirror, so concurrent requests share it. Reads use a mirror for its immutable objects
 * (tips are read live from the remote), so nothing they rely on goes stale: after a merge
 * the next operation fetches only if it lacks a commit it needs. Its branch refs (as the
 * last fetch or merge push left them) serve merges only as presumed tips, which the push's
 * leases check. Pass one registry to every `openProjectRepo` of
 * a process; the default one is process-wide because a mirror directory is too.
 */
export class MirrorRegistry {
  private readonly states = new Map<string, MirrorState>();

  state(mirrorPath: string): MirrorState {
    let s = this.states.get(mirrorPath);
    if (!s) {
      s = new MirrorState(mirrorPath);
      this.states.set(mirrorPath, s);
    }
    return s;
  }
}

export const processMirrors = new MirrorRegistry();

export class MirrorState {
  private created: Promise<void> | null = null;
  private made = false;
  private inflight: Promise<void> | null = null;
  /** Number of fetches started, for tests and logs. */
  fetches = 0;

  constructor(readonly path: string) {}

  /**
   * Creates the bare mirror once; later calls cost one stat (a mirror is a cache that may
   * be deleted: it is then made again).
   */
  ensureCreated(): Promise<void> {
    if (this.made && !existsSync(path.join(this.path, 'HEAD'))) {
      this.made = false;
      this.created = null;
    }
    this.created ??= (async () => {
      await mkdir(path.dirname(this.path), { recursive: true });
      // No template: no sample hooks (and no git the server runs runs hooks anyway).
      // `git init` on an existing repository is a no-op.
      await runGit(['init', '--bare', '--quiet', '--template=', '--', this.path]);
      this.made = true;
    })().catch((e: unknown) => {
      this.created = null;
      throw e;
    });
    return this.created;
  }

  /** The mirror may have been deleted (it is a cache): the next `ensureCreated` runs `git init` again. */
  recheck(): void {
    this.created = null;
  }

  /** Joins the fetch in flight, or starts one. */
  fetch(doFetch: () => Promise<void>): Promise<void> {
    if (this.inflight) return this.inflight;
    this.fetches++;
    const p = doFetch().finally(() => {
        if (this.inflight === p) this.inflight = null;
      });
    this.inflight = p;
    return p;
  }
}

const PROJECT_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

export function mirrorPathFor(mirrorsDir: string, projectId: string): string {
  if (!PROJECT_ID.test(projectId) || projectId.includes('..')) {
    throw new DomainError('validation', 'Validation failed', 'Invalid project id for a repository mirror.');
  }
  return path.join(path.resolve(mirrorsDir), `${projectId}.git`);
}
