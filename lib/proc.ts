import { readdirSync, readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';

/**
 * Everything the server (and the sandbox entrypoint) reads from Linux's /proc, in one
 * place: a process's stat line (state, parent, start time: with the pid, the identity a
 * recycled pid never shares), the processes that carry an environment tag, and this
 * process's limits and open descriptors. Off Linux every reader answers "unknown"
 * (undefined, null, an empty list), never throws.
 */

export interface ProcStat {
  /** One letter: R, S, D, Z (zombie), X (dead), … */
  state: string;
  ppid: number;
  /** Field 22, clock ticks since boot: with the pid, names one process for its whole life. */
  startTime: string;
}

/** `pid (comm) state ppid … starttime(22) …` of /proc/<pid>/stat. */
export function parseStat(text: string): ProcStat {
  // comm may hold spaces and parentheses: fields start after the last ')'.
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  // fields[0] is field 3 (state); starttime is field 22 -> fields[19].
  return { state: fields[0] ?? '?', ppid: Number(fields[1]), startTime: fields[19] ?? '' };
}

/** The stat of `pid`; undefined when there is no such process (or no /proc). */
export function procStat(pid: number): ProcStat | undefined {
  try {
    return parseStat(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return undefined;
  }
}

/** Whether the process `pid` that started at `startTime` still runs (not a recycled pid, not a zombie). */
export function runsSince(pid: number, startTime: string): boolean {
  const st = procStat(pid);
  return !!st && st.startTime === startTime && st.state !== 'Z' && st.state !== 'X';
}

/** Every pid on the host (as this process sees it). */
export function allPids(): number[] {
  try {
    return readdirSync('/proc').filter((e) => /^\d+$/.test(e)).map(Number);
  } catch {
    return [];
  }
}

/** The pids whose parent is `pid`. */
export function childrenOf(pid: number): number[] {
  return allPids().filter((p) => procStat(p)?.ppid === pid);
}

/**
 * Whether `pid`'s environment holds the entry `name=value`: true, false, or null when it
 * cannot be read (another user's process, or gone).
 */
export async function carriesEnv(pid: number, entry: string): Promise<boolean | null> {
  const env = await readFile(`/proc/${pid}/environ`, 'utf8').catch(() => null);
  return env === null ? null : `\0${env}`.includes(`\0${entry}\0`);
}

/** The pids (this process excepted) whose environment holds the entry `name=value`. */
export async function pidsCarryingEnv(entry: string): Promise<number[]> {
  const out: number[] = [];
  for (const pid of allPids()) {
    if (pid === process.pid) continue;
    if ((await carriesEnv(pid, entry)) === true) out.push(pid);
  }
  return out;
}

/** The soft RLIMIT_NOFILE of this process (`Max open files` in /proc/self/limits); null when unknown. */
export function readNofileLimit(limitsText?: string): number | null {
  const text = limitsText ?? selfLimits();
  if (text === null) return null;
  const m = /^Max open files\s+(\S+)/m.exec(text);
  if (!m) return null;
  return m[1] === 'unlimited' ? Number.MAX_SAFE_INTEGER : Number(m[1]);
}

/** The hard limit of `Max open files` / `Max processes` of this process (null: unknown or unlimited). */
export function readHardLimit(name: 'Max open files' | 'Max processes'): number | null {
  const m = new RegExp(`^${name}\\s+\\S+\\s+(\\S+)`, 'm').exec(selfLimits() ?? '');
  return m && m[1] !== 'unlimited' ? Number(m[1]) : null;
}

/** Descriptors this process has open now (0 when unknown). */
export function countOpenFds(): number {
  try {
    return readdirSync('/proc/self/fd').length;
  } catch {
    return 0;
  }
}

/** This process's /proc/self/cgroup (`id:controllers:path` lines); null when unknown. */
export function readSelfCgroups(): string | null {
  try {
    return readFileSync('/proc/self/cgroup', 'utf8');
  } catch {
    return null;
  }
}

function selfLimits(): string | null {
  try {
    return readFileSync('/proc/self/limits', 'utf8');
  } catch {
    return null;
  }
}
