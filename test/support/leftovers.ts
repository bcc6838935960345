/**
 * Processes a test left behind. Sandboxes run detached (they must survive a server crash),
 * so a test whose server stopped can leave its sandboxes running after its data directory
 * is gone. Found in /proc: process sandboxes (and everything they started) by the
 * workspace in their environment, bwrap ones (which see `/workspace`) by the sandbox
 * directories on their command line.
 *
 * Run as a script (`node dist/test/support/leftovers.js`, as `.ci/run` does after
 * `npm test`): lists every process whose command line or sandbox workspace names a test
 * directory (`<tmp>/svc-…`) and exits 1 when there is one.
 */
import { readdir, readFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export interface Leftover {
  pid: number;
  command: string;
}

interface Proc {
  pid: number;
  argv: string[];
  env: string;
}

async function processes(): Promise<Proc[]> {
  const out: Proc[] = [];
  for (const name of await readdir('/proc').catch(() => [] as string[])) {
    if (!/^\d+$/.test(name)) continue;
    const pid = Number(name);
    if (pid === process.pid) continue;
    const cmdline = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
    if (!cmdline) continue; // gone, or a kernel thread
    const env = await readFile(`/proc/${pid}/environ`, 'utf8').catch(() => '');
    out.push({ pid, argv: cmdline.split('\0').filter(Boolean), env });
  }
  return out;
}

const commandOf = (p: Proc) => p.argv.join(' ').slice(0, 300);

/** The sandboxes (and their children) of the data directory `dataDir`, alive now. */
export async function sandboxesUnder(dataDir: string): Promise<Leftover[]> {
  const root = `${path.join(dataDir, 'sandboxes')}/`;
  const marker = `SVC_WORKSPACE=${root}`;
  return (await processes())
    .filter((p) => (p.env.includes(marker) && p.env.includes('SVC_SANDBOX_ID=')) || (path.basename(p.argv[0] ?? '') === 'bwrap' && p.argv.some((a) => a.startsWith(root))))
    .map((p) => ({ pid: p.pid, command: commandOf(p) }));
}

/** SIGKILL to each one's process group and to itself (a bwrap's init is no group leader). */
export function killAll(found: Leftover[]): void {
  for (const { pid } of found) {
    for (const target of [-pid, pid]) {
      try {
        process.kill(target, 'SIGKILL');
      } catch {
        /* gone, or not a group leader */
      }
    }
  }
}

/**
 * Kills the sandboxes of `dataDir` and waits (up to `waitMs`) until none is alive: what
 * was killed, and what survived (which a caller fails on).
 */
export async function killSandboxesUnder(dataDir: string, waitMs = 5_000): Promise<{ killed: Leftover[]; survivors: Leftover[] }> {
  const killed = await sandboxesUnder(dataDir);
  if (!killed.length) return { killed, survivors: [] };
  killAll(killed);
  let survivors = await sandboxesUnder(dataDir);
  for (const deadline = Date.now() + waitMs; survivors.length && Date.now() < deadline; survivors = await sandboxesUnder(dataDir)) {
    killAll(survivors); // a sandbox may have started a child meanwhile
    await new Promise((r) => setTimeout(r, 100));
  }
  return { killed, survivors };
}

/** Every process whose command line, or sandbox workspace, names a test directory under the temp dir. */
export async function testProcessesLeft(): Promise<Leftover[]> {
  const prefix = path.join(os.tmpdir(), 'svc-');
  return (await processes())
    .filter((p) => p.argv.some((a) => a.includes(prefix)) || p.env.split('\0').some((v) => v.startsWith(`SVC_WORKSPACE=${prefix}`)))
    .map((p) => ({ pid: p.pid, command: commandOf(p) }));
}

/**
 * The data directories of this worker's test servers (server.ts registers them): each
 * with how many of its servers are running. The root hooks (fixtures.ts) sweep those whose
 * servers all stopped after each test, and every one at the end of each file.
 */
const dataDirs = new Map<string, number>();
export const serverStarted = (dir: string): void => void dataDirs.set(dir, (dataDirs.get(dir) ?? 0) + 1);
export const serverStopped = (dir: string): void => void (dataDirs.has(dir) && dataDirs.set(dir, Math.max(0, dataDirs.get(dir)! - 1)));

/**
 * Kills the sandboxes of test servers that are gone (`all`: of every server this worker
 * started) and throws when one survives that. What was killed is said on the console: a
 * spec that leaves sandboxes behind is worth fixing even when the sweep catches them.
 */
export async function sweepTestSandboxes(opts: { all?: boolean } = {}): Promise<void> {
  const survived: string[] = [];
  for (const [dir, running] of [...dataDirs]) {
    if (running > 0 && !opts.all) continue;
    const { killed, survivors } = await killSandboxesUnder(dir);
    if (killed.length) console.log(`    (killed ${killed.length} sandbox process(es) of a stopped test server left running under ${dir})`);
    if (survivors.length) survived.push(...survivors.map((l) => `pid ${l.pid}: ${l.command}`));
    else if (running === 0) dataDirs.delete(dir);
  }
  if (survived.length) throw new Error(`sandbox processes of a test server survived SIGKILL:\n  ${survived.join('\n  ')}`);
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  // No top-level await: mocha loads this module (through fixtures.ts) with require().
  void testProcessesLeft().then((left) => {
    for (const l of left) process.stdout.write(`left running: pid ${l.pid}: ${l.command}\n`);
    process.exit(left.length ? 1 : 0);
  });
}
