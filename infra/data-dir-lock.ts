import { randomBytes } from 'node:crypto';
import { readFileSync, unlinkSync } from 'node:fs';
import { link, mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { systemClock } from '../lib/clock.js';
import { procStat } from '../lib/proc.js';

/**
 * One server per embedded database: `svc-server start` (and `api`, `worker`) on the embedded
 * PostgreSQL holds `<data dir>/server.lock` for its lifetime, taken before anything else
 * starts (PostgreSQL, workers, listeners). A second server on the same data dir stops at
 * once, naming the process that holds it. `migrate` and `admin` take no lock: they share the
 * running server's PostgreSQL. On an external PostgreSQL (DATABASE_URL) no server locks:
 * replicas may share a repos volume.
 *
 * The file names its holder (pid, and where /proc has it, the process's start time, so a
 * pid reused after a crash or reboot is not mistaken for the holder). A lock whose holder is
 * gone is taken over. The file is created whole and linked into place, so two starts that
 * race never both hold it.
 */
export const LOCK_FILE = 'server.lock';

interface Holder {
  pid: number;
  /** /proc/<pid>/stat's start time (clock ticks since boot), when the system has /proc. */
  started: string | null;
  since: string;
}

export class DataDirLockedError extends Error {
  override name = 'DataDirLockedError';
  constructor(
    readonly dataDir: string,
    readonly pid: number,
  ) {
    super(
      `another svc-server (pid ${pid}) is running on the data directory ${dataDir}: stop it first, or give this one a data directory of its own (SVC_DATA_DIR); 'svc-server migrate' and 'admin' work beside it`,
    );
  }
}

export interface DataDirLock {
  readonly file: string;
  release(): Promise<void>;
}

const startTime = (pid: number): string | null => procStat(pid)?.startTime ?? null;

function alive(h: Holder): boolean {
  if (h.pid === process.pid) return false; // this process never took it: a stale file (a container's pid 1 again)
  try {
    process.kill(h.pid, 0);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'EPERM') return false;
  }
  const now = startTime(h.pid);
  return h.started === null || now === null || now === h.started;
}

async function holderOf(file: string): Promise<Holder | null> {
  const text = await readFile(file, 'utf8').catch(() => null);
  if (text === null) return null;
  try {
    const h = JSON.parse(text) as Holder;
    return Number.isInteger(h.pid) && h.pid > 0 ? h : { pid: 0, started: null, since: '' };
  } catch {
    return { pid: 0, started: null, since: '' }; // torn or foreign: nobody's
  }
}

export async function lockDataDir(dataDir: string): Promise<DataDirLock> {
  await mkdir(dataDir, { recursive: true });
  const file = path.join(dataDir, LOCK_FILE);
  const me: Holder = { pid: process.pid, started: startTime(process.pid), since: systemClock.now().toISOString() };
  const tmp = `${file}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`;
  await writeFile(tmp, `${JSON.stringify(me)}\n`, { mode: 0o644 });
  try {
    for (let attempt = 0; ; attempt++) {
      try {
        await link(tmp, file);
        break;
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST' || attempt >= 3) throw err;
      }
      const holder = await holderOf(file);
      if (holder && holder.pid > 0 && alive(holder)) throw new DataDirLockedError(dataDir, holder.pid);
      // Gone: moved aside and tried again. Another start may have taken it over in between:
      // what was moved is checked, and a live holder's file goes back.
      const aside = `${file}.stale.${process.pid}`;
      if (await rename(file, aside).then(() => true, () => false)) {
        const moved = await holderOf(aside);
        if (moved && moved.pid > 0 && moved.pid !== holder?.pid && alive(moved)) {
          await link(aside, file).catch(() => undefined);
          await rm(aside, { force: true });
          throw new DataDirLockedError(dataDir, moved.pid);
        }
        await rm(aside, { force: true });
      }
    }
  } finally {
    await rm(tmp, { force: true });
  }
  let released = false;
  const releaseNow = () => {
    if (released) return;
    released = true;
    try {
      const h = JSON.parse(readFileSync(file, 'utf8')) as Holder;
      if (h.pid === process.pid) unlinkSync(file);
    } catch {
      /* already gone */
    }
  };
  // Whatever way the process ends (an error after the lock, process.exit), the lock goes with it.
  process.once('exit', releaseNow);
  return {
    file,
    release: async () => {
      process.off('exit', releaseNow);
      releaseNow();
    },
  };
}
