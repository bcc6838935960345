import { randomUUID } from 'node:crypto';
import { createWriteStream, existsSync } from 'node:fs';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { DomainError } from '../../domain/errors.js';
import { runGit } from '../../lib/git-run.js';

/**
 * The server's store of paused workspaces: one bare repository per
 * project under `<repos dir>/session-state/<project id>.git`, holding each session's
 * saved workspace on `refs/svc/sessions/<session id>/wip`. It is neither the managed
 * repository smart HTTP serves (a managed repository is `<repos dir>/<uuid>.git`; nothing
 * maps a URL here), nor a remote's mirror, nor the user's `file://` repository, so the
 * ref is never listed, served, accepted or pushed anywhere. Every api and worker process
 * reads the same store on the shared repos volume.
 *
 * What comes in is a git bundle from a sandbox, so it is treated as hostile: git verifies
 * it, fetches only the fixed ref `refs/svc/wip` from it with every object checked
 * (`fetch.fsckObjects`), and the result must be the commit the sandbox named.
 */
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const SHA = /^[0-9a-f]{40}([0-9a-f]{24})?$/;
/** The one ref a sandbox's bundle carries. */
export const BUNDLE_REF = 'refs/svc/wip';
export const wipRef = (sessionId: string): string => `refs/svc/sessions/${checkId(sessionId, 'session')}/wip`;

function checkId(id: string, what: string): string {
  if (!UUID.test(id)) throw new DomainError('validation', 'Validation failed', `Invalid ${what} id.`);
  return id;
}

const badBundle = (message: string) => new DomainError('validation', 'Bad checkpoint', message);

export interface SessionStateStore {
  /** Verifies `bundle` and points the session's wip ref at its commit, which must be `sha`. */
  accept(projectId: string, sessionId: string, bundle: Buffer, sha: string): Promise<void>;
  /**
   * A fresh file for an incoming bundle of `projectId`, streamed there before `acceptFile`:
   * `open` creates it (0600, never an existing file), `discard` removes it.
   */
  incoming(projectId: string): Promise<IncomingBundle>;
  /** As `accept`, for a bundle already in `file` (from `incoming`), which is removed either way. */
  acceptFile(projectId: string, sessionId: string, file: string, sha: string): Promise<void>;
  /** A bundle of the session's wip ref (prerequisite-free), or null when there is none. */
  bundle(projectId: string, sessionId: string): Promise<Buffer | null>;
  /** Deletes the session's wip ref (its objects go with the next gc). */
  remove(projectId: string, sessionId: string): Promise<void>;
}

export interface IncomingBundle {
  file: string;
  open(): NodeJS.WritableStream;
  discard(): Promise<void>;
}

export function sessionStateStore(reposDir: string): SessionStateStore {
  const root = path.join(path.resolve(reposDir), 'session-state');
  const repoOf = (projectId: string) => path.join(root, `${checkId(projectId, 'project')}.git`);
  const tmpFile = () => path.join(root, `.incoming-${randomUUID()}.bundle`);

  async function ensure(projectId: string): Promise<string> {
    const dir = repoOf(projectId);
    if (!existsSync(path.join(dir, 'HEAD'))) {
      await mkdir(dir, { recursive: true });
      await runGit(['init', '--quiet', '--bare', dir]);
      // Nothing in here is ever served; gc must not prune a ref's objects early.
      await runGit(['config', 'gc.pruneExpire', '2.weeks.ago'], { cwd: dir });
    }
    return dir;
  }

  return {
    async accept(projectId, sessionId, bundle, sha) {
      const { file } = await this.incoming(projectId);
      await writeFile(file, bundle, { mode: 0o600, flag: 'wx' });
      await this.acceptFile(projectId, sessionId, file, sha);
    },
    async incoming(projectId) {
      await ensure(projectId);
      const file = tmpFile();
      return { file, open: () => createWriteStream(file, { mode: 0o600, flags: 'wx' }), discard: () => rm(file, { force: true }) };
    },
    async acceptFile(projectId, sessionId, file, sha) {
      try {
        if (!SHA.test(sha)) throw badBundle('The checkpoint names no commit.');
        const dir = await ensure(projectId);
        const verify = await runGit(['bundle', 'verify', '--quiet', file], { cwd: dir, okCodes: [0, 1, 128], timeoutMs: 120_000 });
        if (verify.code !== 0) throw badBundle('The checkpoint is not a valid git bundle.');
        const fetched = await runGit(
          ['-c', 'fetch.fsckObjects=true', '-c', 'transfer.fsckObjects=true', 'fetch', '--quiet', '--no-tags', '--no-write-fetch-head', '--no-auto-gc', '--', file, `+${BUNDLE_REF}:${wipRef(sessionId)}`],
          { cwd: dir, okCodes: [0, 1, 128], timeoutMs: 300_000 },
        );
        if (fetched.code !== 0) throw badBundle(`The checkpoint was refused by git: ${fetched.stderr.trim().split('\n').pop() ?? ''}`);
        const got = (await runGit(['rev-parse', '--verify', '--quiet', `${wipRef(sessionId)}^{commit}`], { cwd: dir, okCodes: [0, 1] })).stdout.toString().trim();
        if (got !== sha) {
          await runGit(['update-ref', '-d', wipRef(sessionId)], { cwd: dir, okCodes: [0, 1] });
          throw badBundle('The checkpoint bundle does not hold the commit it names.');
        }
      } finally {
        await rm(file, { force: true });
      }
    },
    async bundle(projectId, sessionId) {
      const dir = repoOf(projectId);
      if (!existsSync(path.join(dir, 'HEAD'))) return null;
      const has = await runGit(['rev-parse', '--verify', '--quiet', wipRef(sessionId)], { cwd: dir, okCodes: [0, 1] });
      if (has.code !== 0) return null;
      const file = tmpFile();
      try {
        await runGit(['bundle', 'create', '--quiet', file, wipRef(sessionId)], { cwd: dir, timeoutMs: 300_000 });
        return await readFile(file);
      } finally {
        await rm(file, { force: true });
      }
    },
    async remove(projectId, sessionId) {
      const dir = repoOf(projectId);
      if (!existsSync(path.join(dir, 'HEAD'))) return;
      await runGit(['update-ref', '-d', wipRef(sessionId)], { cwd: dir, okCodes: [0, 1] });
    },
  };
}
