import { closeSync, constants, fstatSync, openSync, readFileSync, readSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { assertBranchName, isSha } from '../../domain/refs.js';

/**
 * Branch tips of a repository on this machine, read from its ref files the way git's
 * `files` ref backend stores them, with no process: `<gitdir>/refs/heads/<name>` (a loose
 * ref) overrides the `<name>` line of `<gitdir>/packed-refs`. Every call reads the disk
 * again, so a read sees the tips as they are now, exactly as `ls-remote` would.
 *
 * It answers only where it is certain to agree with `git ls-remote`; everywhere else it
 * returns `null` and the caller asks git:
 * - the URL is not a plain local `file://` URL, or the directory is not a bare repository
 *   (a worktree's `.git`, `.git` files, linked worktrees: git resolves those);
 * - the repository uses the reftable backend, or hides refs from upload-pack
 *   (`uploadpack.hideRefs` / `transfer.hideRefs`: ls-remote would not list them);
 * - a loose ref is a symbolic ref, a symlink, or anything but one object id;
 * - the platform's file names may be case-insensitive (macOS, Windows).
 * (One difference remains by design: upload-pack omits a ref whose object is missing from
 * a corrupt repository; this reader reports it. A push writes objects before refs, so a
 * healthy repository never shows it.)
 *
 * Race safety: git writes a loose ref by renaming a lock file over it, and `pack-refs`
 * writes packed-refs before it deletes the loose files it packed, so reading the loose
 * file first and packed-refs second never misses a ref that existed for the whole read.
 */
export interface LocalRefReader {
  /** Tips of `branches` (validated names), `null` for a missing one; `null` overall: ask git. */
  readTips(branches: readonly string[]): Promise<Record<string, string | null> | null>;
  /** The same, read synchronously (under a ref lock held by the caller). */
  readTipsSync(branches: readonly string[]): Record<string, string | null> | null;
}

/** A reader for `url` when it may serve it (a `file://` URL on a case-sensitive platform), else null. */
export function localRefReader(url: string): LocalRefReader | null {
  if (!CASE_SENSITIVE_PLATFORM) return null;
  let dir: string;
  try {
    const u = new URL(url);
    if (u.protocol !== 'file:' || (u.host !== '' && u.host !== 'localhost') || u.search || u.hash) return null;
    dir = fileURLToPath(u);
  } catch {
    return null;
  }
  return new FilesBackendReader(path.resolve(dir));
}

const CASE_SENSITIVE_PLATFORM = process.platform === 'linux' || process.platform === 'freebsd' || process.platform === 'openbsd';

interface PackedCache {
  ino: number;
  size: number;
  mtimeNs: bigint;
  refs: Map<string, string>;
}

const NOT_LOOSE = Symbol('not-loose');
const ASK_GIT = Symbol('ask-git');

class FilesBackendReader implements LocalRefReader {
  private packed: PackedCache | null = null;
  private config: { mtimeNs: bigint; size: number; ino: number; usable: boolean } | null = null;

  constructor(private readonly gitDir: string) {}

  /**
   * The files are read synchronously, on purpose: a loose ref is 41 bytes and the config
   * a few hundred, so each read is a few microseconds of page cache, while a thread-pool
   * round trip per open/stat/read/close costs ~10x that in CPU (measured: ~230 us per call
   * async, ~15 us sync). A repository on a slow network filesystem would stall the event
   * loop for as long as its reads take: serve such remotes over a git URL instead.
   */
  async readTips(branches: readonly string[]): Promise<Record<string, string | null> | null> {
    return this.readTipsSync(branches);
  }

  readTipsSync(branches: readonly string[]): Record<string, string | null> | null {
    const names = [...new Set(branches.map((b) => assertBranchName(b)))];
    if (!this.usable()) return null;
    const tips: Record<string, string | null> = {};
    let needPacked = false;
    for (const name of names) {
      const loose = this.readLoose(name);
      if (loose === ASK_GIT) return null;
      if (loose === NOT_LOOSE) {
        tips[name] = null;
        needPacked = true;
      } else {
        tips[name] = loose;
      }
    }
    if (needPacked) {
      const packed = this.readPacked();
      if (packed === ASK_GIT) return null;
      for (const name of names) if (tips[name] === null) tips[name] = packed.get(`refs/heads/${name}`) ?? null;
    }
    return tips;
  }

  /**
   * A bare repository with the files backend and nothing hidden from upload-pack. The
   * config is re-read whenever it changes (stat), so a repository converted later is seen.
   */
  private usable(): boolean {
    const configPath = path.join(this.gitDir, 'config');
    const st = statSync(configPath, { bigint: true, throwIfNoEntry: false });
    if (!st || !st.isFile()) return false;
    const c = this.config;
    if (c && c.mtimeNs === st.mtimeNs && c.size === Number(st.size) && c.ino === Number(st.ino)) return c.usable;
    let usable = false;
    try {
      const config = readSmall(configPath, 1024 * 1024);
      const kind = (p: string) => statSync(path.join(this.gitDir, p), { throwIfNoEntry: false });
      const text = config?.toString('utf8').toLowerCase() ?? '';
      usable =
        config !== null &&
        /^\s*bare\s*=\s*true\s*$/m.test(text) &&
        !text.includes('hiderefs') &&
        !text.includes('refstorage') &&
        !text.includes('worktreeconfig') &&
        !text.includes('include') && // [include] / [includeIf]: settings we would not see
        !!kind('HEAD')?.isFile() &&
        !!kind('refs')?.isDirectory() &&
        !!kind('objects')?.isDirectory() &&
        kind('reftable') === undefined;
    } catch {
      usable = false;
    }
    this.config = { mtimeNs: st.mtimeNs, size: Number(st.size), ino: Number(st.ino), usable };
    return usable;
  }

  /**
   * The loose ref's object id, NOT_LOOSE when there is no loose file, ASK_GIT for anything
   * unusual. Three calls (open, one read, close), no fstat: a directory fails the read with
   * EISDIR (`a/` holds refs `a/...`: `a` is not a loose ref); anything else that is not a
   * regular file of one object id fails the read or does not read as one (a FIFO opens at
   * once with O_NONBLOCK and its read fails; a file over LOOSE_MAX reads LOOSE_MAX + 1 bytes).
   */
  private readLoose(name: string): string | typeof NOT_LOOSE | typeof ASK_GIT {
    // `name` passed assertBranchName: no `..`, no leading `/`, no empty or dot-led components.
    const file = path.join(this.gitDir, 'refs', 'heads', ...name.split('/'));
    let fd: number;
    try {
      fd = openSync(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      // ENOENT: no such ref; ENOTDIR: a prefix is a ref file (`a` exists, `a/b` cannot).
      if (code === 'ENOENT' || code === 'ENOTDIR') return NOT_LOOSE;
      return ASK_GIT; // ELOOP (a symlink), EACCES, ENXIO (a socket), ...
    }
    try {
      const n = readSync(fd, looseBuf, 0, looseBuf.length, 0);
      if (n > LOOSE_MAX) return ASK_GIT;
      const text = looseBuf.toString('latin1', 0, n).trim();
      return isSha(text) ? text : ASK_GIT; // `ref: ...` (a symbolic ref) or garbage: git decides
    } catch (e) {
      return (e as NodeJS.ErrnoException).code === 'EISDIR' ? NOT_LOOSE : ASK_GIT;
    } finally {
      closeSync(fd);
    }
  }

  /** packed-refs as a map (absent file: empty), parsed again only when the file changed. */
  private readPacked(): Map<string, string> | typeof ASK_GIT {
    let fd: number;
    try {
      fd = openSync(path.join(this.gitDir, 'packed-refs'), constants.O_RDONLY | constants.O_NOFOLLOW);
    } catch (e) {
      return (e as NodeJS.ErrnoException).code === 'ENOENT' ? new Map() : ASK_GIT;
    }
    try {
      // git replaces packed-refs by renaming a new file over it: a new inode every time.
      const st = fstatSync(fd, { bigint: true });
      if (!st.isFile()) return ASK_GIT;
      const c = this.packed;
      if (c && c.ino === Number(st.ino) && c.size === Number(st.size) && c.mtimeNs === st.mtimeNs) return c.refs;
      const refs = parsePackedRefs(readFileSync(fd, 'utf8'));
      if (refs === null) return ASK_GIT;
      this.packed = { ino: Number(st.ino), size: Number(st.size), mtimeNs: st.mtimeNs, refs };
      return refs;
    } catch {
      return ASK_GIT;
    } finally {
      closeSync(fd);
    }
  }
}

/** A loose ref holds one object id (40 or 64 hex) and a newline. */
const LOOSE_MAX = 200;
/** The reads are synchronous and copied out at once: one buffer serves them all. */
const looseBuf = Buffer.allocUnsafe(LOOSE_MAX + 1);

/**
 * `# pack-refs with: ...` header, then `<oid> SP <refname>` lines, each optionally
 * followed by a `^<peeled oid>` line (annotated tags). Null when a line is not one of those.
 */
export function parsePackedRefs(text: string): Map<string, string> | null {
  const refs = new Map<string, string>();
  for (const line of text.split('\n')) {
    if (line === '' || line.startsWith('#') || line.startsWith('^')) continue;
    const sp = line.indexOf(' ');
    if (sp < 0) return null;
    const oid = line.slice(0, sp);
    if (!isSha(oid)) return null;
    refs.set(line.slice(sp + 1), oid);
  }
  return refs;
}

function readSmall(file: string, max: number): Buffer | null {
  let fd: number;
  try {
    fd = openSync(file, constants.O_RDONLY | constants.O_NOFOLLOW);
  } catch {
    return null;
  }
  try {
    const st = fstatSync(fd);
    if (!st.isFile() || st.size > max) return null;
    return readFileSync(fd);
  } finally {
    closeSync(fd);
  }
}
