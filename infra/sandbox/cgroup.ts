import { existsSync, readFileSync } from 'node:fs';
import { mkdir, readdir, readFile, rmdir, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { epochMsOf } from '../../lib/clock.js';
import { readSelfCgroups } from '../../lib/proc.js';

/**
 * A cgroup of its own for one sandbox (bwrap), below the server's own cgroup, holding
 * memory, pids and cpu limits. Made only where the host lets this process do it: cgroup v2
 * with memory, pids and cpu delegated to the server's cgroup (its `cgroup.subtree_control`
 * writable: systemd `Delegate=yes`, a container given its cgroup), or cgroup v1 hierarchies
 * the server can write (root). Elsewhere `probe` says why, and the sandbox runs with the
 * rlimits and nice 19 only.
 *
 * The sandbox enters its cgroup before bwrap runs: the launch starts with a shell that
 * writes its own pid into each `cgroup.procs` and then execs the rest (`enterArgs`), so no
 * process of the sandbox ever runs outside it.
 */
export interface CgroupLimits {
  memoryMb: number;
  cpus: number;
  pids: number;
}

export interface SandboxCgroup {
  /** The `cgroup.procs` files a process must be written into (one per v1 hierarchy, one for v2). */
  procs: string[];
  /** Where memory.max / memory.limit_in_bytes lives (tests read what was written). */
  memoryDir: string;
  remove(): Promise<void>;
}

type Layout = { kind: 'v2'; base: string } | { kind: 'v1'; bases: { memory: string; pids: string; cpu: string } };

const ROOT = '/sys/fs/cgroup';

function ownPaths(): Map<string, string> {
  const out = new Map<string, string>();
  const text = readSelfCgroups();
  if (text === null) return out;
  for (const line of text.trim().split('\n')) {
    const [, controllers, p] = line.split(':');
    if (controllers === undefined || p === undefined) continue;
    for (const c of controllers === '' ? [''] : controllers.split(',')) out.set(c, p);
  }
  return out;
}

let probed: { ok: true; layout: Layout } | { ok: false; reason: string } | undefined;

/** Whether this process can make per-sandbox cgroups, and where (read once). */
export async function probeCgroups(): Promise<{ ok: true } | { ok: false; reason: string }> {
  probed ??= await probe();
  return probed.ok ? { ok: true } : probed;
}

async function probe(): Promise<{ ok: true; layout: Layout } | { ok: false; reason: string }> {
  const own = ownPaths();
  if (existsSync(path.join(ROOT, 'cgroup.controllers'))) {
    const base = path.join(ROOT, own.get('') ?? '/');
    const available = readFileSync(path.join(base, 'cgroup.controllers'), 'utf8').split(/\s+/);
    const missing = ['memory', 'pids', 'cpu'].filter((c) => !available.includes(c));
    if (missing.length) return { ok: false, reason: `cgroup v2: ${missing.join(', ')} not delegated to ${base}` };
    try {
      await writeFile(path.join(base, 'cgroup.subtree_control'), '+memory +pids +cpu');
    } catch (err) {
      return { ok: false, reason: `cgroup v2: cannot enable controllers below ${base} (${(err as NodeJS.ErrnoException).code}: the server's cgroup is not delegated, or holds processes itself)` };
    }
    return { ok: true, layout: { kind: 'v2', base } };
  }
  const bases = { memory: '', pids: '', cpu: '' };
  for (const c of ['memory', 'pids', 'cpu'] as const) {
    const mount = [path.join(ROOT, c), path.join(ROOT, 'cpu,cpuacct')].find((d) => existsSync(path.join(d, 'cgroup.procs')));
    if (!mount) return { ok: false, reason: `cgroup v1: no ${c} hierarchy mounted` };
    bases[c] = path.join(mount, own.get(c) ?? '/');
  }
  const test = path.join(bases.pids, `svc-probe-${process.pid}`);
  try {
    await mkdir(test);
    await rmdir(test);
  } catch (err) {
    return { ok: false, reason: `cgroup v1: cannot create a cgroup under ${bases.pids} (${(err as NodeJS.ErrnoException).code})` };
  }
  return { ok: true, layout: { kind: 'v1', bases } };
}

/** The sandbox's cgroup with its limits written, or null where the host allows none. */
export async function createSandboxCgroup(name: string, limits: CgroupLimits): Promise<SandboxCgroup | null> {
  probed ??= await probe();
  if (!probed.ok) return null;
  const leaf = `svc-sandbox-${name}`;
  await sweepStale(probed.layout);
  const memoryBytes = String(limits.memoryMb * 1024 * 1024);
  const period = 100_000;
  const quota = String(Math.max(1000, Math.round(limits.cpus * period)));
  const layout = probed.layout;
  if (layout.kind === 'v2') {
    const dir = path.join(layout.base, leaf);
    await mkdir(dir, { recursive: true });
    await writeFile(path.join(dir, 'memory.max'), memoryBytes);
    await writeFile(path.join(dir, 'memory.swap.max'), '0').catch(() => undefined); // absent without swap accounting
    await writeFile(path.join(dir, 'pids.max'), String(limits.pids));
    await writeFile(path.join(dir, 'cpu.max'), `${quota} ${period}`);
    return { procs: [path.join(dir, 'cgroup.procs')], memoryDir: dir, remove: () => removeDirs([dir]) };
  }
  const dirs = { memory: path.join(layout.bases.memory, leaf), pids: path.join(layout.bases.pids, leaf), cpu: path.join(layout.bases.cpu, leaf) };
  for (const d of new Set(Object.values(dirs))) await mkdir(d, { recursive: true });
  await writeFile(path.join(dirs.memory, 'memory.limit_in_bytes'), memoryBytes);
  await writeFile(path.join(dirs.memory, 'memory.memsw.limit_in_bytes'), memoryBytes).catch(() => undefined); // absent without swap accounting
  await writeFile(path.join(dirs.pids, 'pids.max'), String(limits.pids));
  await writeFile(path.join(dirs.cpu, 'cpu.cfs_period_us'), String(period));
  await writeFile(path.join(dirs.cpu, 'cpu.cfs_quota_us'), quota);
  const unique = [...new Set(Object.values(dirs))];
  return { procs: unique.map((d) => path.join(d, 'cgroup.procs')), memoryDir: dirs.memory, remove: () => removeDirs(unique) };
}

/**
 * Sandbox cgroups left behind by sandboxes that ended without `destroy` (a server killed,
 * processes killed by hand): each empty one older than a minute is removed when the next
 * sandbox is made (a younger one may be a create in progress, its process not yet in).
 */
async function sweepStale(layout: Layout): Promise<void> {
  const bases = layout.kind === 'v2' ? [layout.base] : [...new Set(Object.values(layout.bases))];
  const cutoff = epochMsOf() - 60_000;
  for (const base of bases) {
    for (const name of await readdir(base).catch(() => [] as string[])) {
      if (!name.startsWith('svc-sandbox-')) continue;
      const dir = path.join(base, name);
      const st = await stat(dir).catch(() => null);
      if (!st || st.mtimeMs > cutoff) continue;
      const procs = await readFile(path.join(dir, 'cgroup.procs'), 'utf8').catch(() => 'unknown');
      if (procs.trim() === '') await rmdir(dir).catch(() => undefined);
    }
  }
}

/** Removes a sandbox's cgroup directories once its processes are gone (a few tries: the kernel lets go shortly after exit). */
async function removeDirs(dirs: string[]): Promise<void> {
  for (const d of dirs) {
    for (let i = 0; i < 20; i++) {
      const ok = await rmdir(d).then(
        () => true,
        (err: NodeJS.ErrnoException) => err.code === 'ENOENT',
      );
      if (ok) break;
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}

/** The cgroup directory of a sandbox by name, for `destroy` after a restart (nothing in memory then). */
export async function removeSandboxCgroup(name: string): Promise<void> {
  probed ??= await probe();
  if (!probed.ok) return;
  const leaf = `svc-sandbox-${name}`;
  const layout = probed.layout;
  const dirs = layout.kind === 'v2' ? [path.join(layout.base, leaf)] : [...new Set(Object.values(layout.bases).map((b) => path.join(b, leaf)))];
  await removeDirs(dirs.filter((d) => existsSync(d)));
}

/** `sh -c` that writes its pid into each cgroup.procs, then execs `file args`. */
export function enterArgs(cg: SandboxCgroup, file: string, args: readonly string[]): { file: string; args: string[] } {
  const script = 'n=$1; shift; while [ "$n" -gt 0 ]; do echo $$ > "$1" || exit 125; shift; n=$((n-1)); done; exec "$@"';
  return { file: '/bin/sh', args: ['-c', script, 'svc-cgroup', String(cg.procs.length), ...cg.procs, file, ...args] };
}

