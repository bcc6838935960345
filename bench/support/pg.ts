/**
 * An embedded PostgreSQL for one bench suite: its own cluster in a temp dir, databases
 * created on demand and migrated, everything stopped and removed by `stop()` (call it in
 * a `finally`; it never throws).
 */
import { chmod, mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { startEmbeddedPostgres, type EmbeddedPostgres } from '../../infra/db/embedded.js';
import { createDb, type Db } from '../../infra/db/db.js';
import { migrate } from '../../infra/db/migrate.js';

export interface BenchPostgres {
  dir: string;
  cluster: EmbeddedPostgres;
  /** A fresh, migrated database `name` (lowercase letters, digits, `_`). */
  database(name: string, opts?: { max?: number }): Promise<{ db: Db; url: string }>;
  /** CPU seconds (user + system) used so far by the cluster's processes, or NaN where /proc is not there. */
  cpuSeconds(): Promise<number>;
  stop(): Promise<void>;
}

/** CPU seconds of `pid` and its children, from /proc (Linux). */
async function processTreeCpu(pid: number): Promise<number> {
  const tick = 100; // USER_HZ
  let total = 0;
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = await readFile(`/proc/${entry}/stat`, 'utf8').catch(() => '');
    // Fields after the command's closing parenthesis: state, ppid, ..., utime (14), stime (15).
    const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (Number(entry) === pid || Number(f[1]) === pid) total += (Number(f[11]) + Number(f[12])) / tick;
  }
  return total;
}

export async function startBenchPostgres(prefix: string): Promise<BenchPostgres> {
  const dir = await mkdtemp(path.join(os.tmpdir(), prefix));
  // As root the postmaster runs as `postgres`, which must traverse the directory.
  await chmod(dir, 0o755);
  const opened: Db[] = [];
  let cluster: EmbeddedPostgres;
  try {
    cluster = await startEmbeddedPostgres(dir);
  } catch (err) {
    await rm(dir, { recursive: true, force: true });
    throw err;
  }
  let stopped: Promise<void> | undefined;
  return {
    dir,
    cluster,
    async database(name, opts = {}) {
      if (!/^[a-z][a-z0-9_]{0,40}$/.test(name)) throw new Error(`bad database name ${name}`);
      const admin = new pg.Client(cluster.url());
      await admin.connect();
      try {
        await admin.query(`CREATE DATABASE ${name}`);
      } finally {
        await admin.end();
      }
      const url = cluster.url(name);
      const db = createDb(url, { max: opts.max ?? 20, applicationName: 'svc-bench' });
      opened.push(db);
      await migrate(db);
      return { db, url };
    },
    async cpuSeconds() {
      const pidFile = await readFile(path.join(dir, 'pg', 'postmaster.pid'), 'utf8').catch(() => '');
      const pid = Number(pidFile.split('\n')[0]);
      return pid > 0 ? processTreeCpu(pid) : NaN;
    },
    stop() {
      stopped ??= (async () => {
        for (const db of opened) await db.close().catch(() => {});
        await cluster.stop().catch(() => {});
        await rm(dir, { recursive: true, force: true }).catch(() => {});
      })();
      return stopped;
    },
  };
}
