import { constants } from 'node:fs';
import { open, stat, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { assertBranchName, isSha } from './refs.js';

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

  async readTips(branches: readonly string[]): Promise<Record<string, string | null> | null> {
    const names = [...new Set(branches.map((b) => assertBranchName(b)))];
    if (!(await this.usable())) return null;
    const tips: Record<string, string | null> = {};
    let needPacked = false;
    for (const name of names) {
      const loose = await this.readLoose(name);
      if (loose === ASK_GIT) return null;
      if (loose === NOT_LOOSE) {
        tips[name] = null;
        needPacked = true;
      } else {
        tips[name] = loose;
      }
    }
    if (needPacked) {
      const packed = await this.readPacked();
      if (packed === ASK_GIT) return null;
      for (const name of names) if (tips[name] === null) tips[name] = packed.get(`refs/heads/${name}`) ?? null;
    }
    return tips;
  }

  /**
   * A bare repository with the files backend and nothing hidden from upload-pack. The
   * config is re-read whenever it changes (stat), so a repository converted later is seen.
   */
  private async usable(): Promise<boolean> {
    const configPath = path.join(this.gitDir, 'config');
    const st = await stat(configPath, { bigint: true }).catch(() => null);
    if (!st || !st.isFile()) return false;
    const c = this.config;
    if (c && c.mtimeNs === st.mtimeNs && c.size === Number(st.size) && c.ino === Number(st.ino)) return c.usable;
    let usable = false;
    try {
      const [config, head, refs, objects, reftable] = await Promise.all([
        readSmall(configPath),
        stat(path.join(this.gitDir, 'HEAD')).catch(() => null),
        stat(path.join(this.gitDir, 'refs')).catch(() => null),
        stat(path.join(this.gitDir, 'objects')).catch(() => null),
        stat(path.join(this.gitDir, 'reftable')).catch(() => null),
      ]);
      const text = config?.toLowerCase() ?? '';
      usable =
        config !== null &&
        /^\s*bare\s*=\s*true\s*$/m.test(text) &&
        !text.includes('hiderefs') &&
        !text.includes('refstorage') &&
        !text.includes('worktreeconfig') &&
        !text.includes('include') && // [include] / [includeIf]: settings we would not see
        !!head?.isFile() &&
        !!refs?.isDirectory() &&
        !!objects?.isDirectory() &&
        reftable === null;
    } catch {
      usable = false;
    }
    this.config = { mtimeNs: st.mtimeNs, size: Number(st.size), ino: Number(st.ino), usable };
    return usable;
  }

  /** The loose ref's object id, NOT_LOOSE when there is no loose file, ASK_GIT for anything unusual. */
  private async readLoose(name: string): Promise<string | typeof NOT_LOOSE | typeof ASK_GIT> {
    // `name` passed assertBranchName: no `..`, no leading `/`, no empty or dot-led components.
    const file = path.join(this.gitDir, 'refs', 'heads', ...name.split('/'));
    let fh: FileHandle;
    try {
      fh = await open(file, constants.O_RDONLY | constants.O_NOFOLLOW);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      // ENOENT: no such ref; ENOTDIR: a prefix is a ref file (`a` exists, `a/b` cannot).
      if (code === 'ENOENT' || code === 'ENOTDIR') return NOT_LOOSE;
      return ASK_GIT; // ELOOP (a symlink), EACCES, ...
    }
    try {
      const st = await fh.stat();
      if (st.isDirectory()) return NOT_LOOSE; // `a/` holds refs `a/...`: `a` is not a loose ref
      if (!st.isFile() || st.size > 200) return ASK_GIT;
      const text = (await fh.readFile('latin1')).trim();
      return isSha(text) ? text : ASK_GIT; // `ref: ...` (a symbolic ref) or garbage: git decides
    } catch (e) {
      return (e as NodeJS.ErrnoException).code === 'EISDIR' ? NOT_LOOSE : ASK_GIT;
    } finally {
      await fh.close().catch(() => {});
    }
  }

  /** packed-refs as a map (absent file: empty), parsed again only when the file changed. */
  private async readPacked(): Promise<Map<string, string> | typeof ASK_GIT> {
    let fh: FileHandle;
    try {
      fh = await open(path.join(this.gitDir, 'packed-refs'), constants.O_RDONLY | constants.O_NOFOLLOW);
    } catch (e) {
      return (e as NodeJS.ErrnoException).code === 'ENOENT' ? new Map() : ASK_GIT;
    }
    try {
      // git replaces packed-refs by renaming a new file over it: a new inode every time.
      const st = await fh.stat({ bigint: true });
      if (!st.isFile()) return ASK_GIT;
      const c = this.packed;
      if (c && c.ino === Number(st.ino) && c.size === Number(st.size) && c.mtimeNs === st.mtimeNs) return c.refs;
      const refs = parsePackedRefs(await fh.readFile('utf8'));
      if (refs === null) return ASK_GIT;
      this.packed = { ino: Number(st.ino), size: Number(st.size), mtimeNs: st.mtimeNs, refs };
      return refs;
    } catch {
      return ASK_GIT;
    } finally {
      await fh.close().catch(() => {});
    }
  }
}

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

async function readSmall(file: string): Promise<string | null> {
  let fh: FileHandle;
  try {
    fh = await open(file, constants.O_RDONLY | constants.O_NOFOLLOW);
  } catch {
    return null;
  }
  try {
    const st = await fh.stat();
    if (!st.isFile() || st.size > 1024 * 1024) return null;
    return await fh.readFile('utf8');
  } finally {
    await fh.close().catch(() => {});
  }
}
