import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readFile, rm } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { projectRoot } from '../../../lib/paths.js';
import { client } from '../../support/http.js';
import { fixtureRepo } from '../../support/repo.js';
import { spawnTestServer, traversableTempDir } from '../../support/server.js';

const run = promisify(execFile);
const bin = path.join(projectRoot, 'dist/ops/svc-server.js');

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}

/** Lines of a pino log at warn or above. */
const warnings = (log: string) => log.split('\n').filter((l) => /"level":(4|5|6)0/.test(l));

/** Jobs created or started at or after `since` (the database's clock), pg-boss's own housekeeping aside. */
async function jobsSince(dataDir: string, since: Date): Promise<string[]> {
  const creds = JSON.parse(await readFile(path.join(dataDir, 'pg-credentials.json'), 'utf8')) as { user: string; password: string; port: number };
  const c = new pg.Client({ host: '127.0.0.1', port: creds.port, user: creds.user, password: creds.password, database: 'svc' });
  await c.connect();
  try {
    const q = "SELECT name FROM pgboss.job WHERE (created_on >= $1 OR started_on >= $1) AND name NOT LIKE '\\_\\_pgboss%'";
    return (await c.query<{ name: string }>(q, [since])).rows.map((r) => r.name);
  } finally {
    await c.end();
  }
}

/** How long a bare Node start takes on this machine now (the part of a CLI's time that is not the CLI's). */
async function nodeStartMs(): Promise<number> {
  const t0 = Date.now();
  await run(process.execPath, ['-e', '0']);
  return Date.now() - t0;
}

const postmasterPid = async (dataDir: string) => Number((await readFile(path.join(dataDir, 'pg', 'postmaster.pid'), 'utf8')).split('\n')[0]);

/** `svc-server` on its embedded defaults: no DATABASE_URL, everything under SVC_DATA_DIR. */
describe('svc-server on the embedded database (real processes)', function () {
  this.timeout(120_000);
  let dataDir: string;
  const env = () => {
    const e: Record<string, string> = { ...(process.env as Record<string, string>), SVC_DATA_DIR: dataDir, LOG_LEVEL: 'warn' };
    delete e.DATABASE_URL;
    return e;
  };

  before(async () => {
    dataDir = await traversableTempDir('svc-lifecycle-');
  });
  after(async () => {
    await rm(dataDir, { recursive: true, force: true });
  });

  it('admin without --init where the data dir has no database: exit 1 naming the dir it resolved, nothing created', async () => {
    // The default data dir is relative: run from another directory, it is a new one there.
    const elsewhere = await traversableTempDir('svc-elsewhere-');
    try {
      const e = env();
      delete e.SVC_DATA_DIR;
      const err = await run(process.execPath, [bin, 'admin', 'bootstrap', '--email', 'lost@example.test'], { env: e, cwd: elsewhere }).then(
        () => null,
        (x: { code: number; stdout: string; stderr: string }) => x,
      );
      expect(err?.code).to.equal(1);
      expect(err?.stdout).to.equal('');
      const lines = err!.stderr.trim().split('\n');
      expect(lines).to.have.length(1);
      expect(lines[0]).to.contain(`no svc database in ${path.join(elsewhere, '.svc-data')}`).and.contain('--init');
      expect(existsSync(path.join(elsewhere, '.svc-data')), 'no data dir created').to.equal(false);
    } finally {
      await rm(elsewhere, { recursive: true, force: true });
    }
  });

  it('admin bootstrap --init with no server running creates the database, prints only a token, and stops it again', async () => {
    const out = await run(process.execPath, [bin, 'admin', 'bootstrap', '--email', 'first@example.test', '--init'], { env: env() });
    expect(out.stdout).to.match(/^svc_pat_[A-Za-z0-9_-]+\n$/);
    const pid = await postmasterPid(dataDir).catch(() => 0);
    expect(pid === 0 || !alive(pid), 'no postmaster left behind').to.equal(true);
  });

  it('starts, shares its postmaster with admin and migrate processes, stops cleanly on SIGTERM, and keeps every row', async () => {
    const server = await spawnTestServer({ SVC_DATA_DIR: dataDir, LOG_LEVEL: 'warn', DATABASE_URL: '' });
    let stopped = false;
    try {
      const pid = await postmasterPid(dataDir);
      expect(alive(pid)).to.equal(true);
      const token = (await run(process.execPath, [bin, 'admin', 'bootstrap', '--email', 'owner@example.test'], { env: env() })).stdout.trim();
      const migrated = await run(process.execPath, [bin, 'migrate'], { env: env() });
      expect(migrated.stdout).to.equal('migrations up to date\n');
      expect(await postmasterPid(dataDir), 'the same postmaster, not a second one').to.equal(pid);
      expect(alive(pid)).to.equal(true);
      const api = client(server.url, token);
      expect((await api.get('/v1/accounts/me')).body.user.email).to.equal('owner@example.test');
      // A repository that exists: project creation checks it.
      const repo = await fixtureRepo();
      try {
        expect((await api.post('/v1/projects', { name: 'Keep me', repo_url: repo.url })).status).to.equal(201);
      } finally {
        await repo.cleanup();
      }

      expect(await server.stop()).to.equal(0);
      stopped = true;
      expect(alive(pid), 'postgres stopped with the server').to.equal(false);

      const again = await spawnTestServer({ SVC_DATA_DIR: dataDir, LOG_LEVEL: 'warn', DATABASE_URL: '' });
      try {
        const projects = (await client(again.url, token).get('/v1/projects')).body.projects;
        expect(projects.map((p: { name: string }) => p.name)).to.deep.equal(['Keep me']);
      } finally {
        expect(await again.stop()).to.equal(0);
      }
    } finally {
      if (!stopped) await server.stop();
    }
  });

  it('a second start on the same data dir (another PORT too) exits 1 within 2 s naming the first; nothing of it ran; the first answers and stops quietly', async () => {
    // A data dir of its own: no project of an earlier test whose jobs would run meanwhile.
    const outer = dataDir;
    dataDir = await traversableTempDir('svc-second-start-');
    const first = await spawnTestServer({ SVC_DATA_DIR: dataDir, LOG_LEVEL: 'info', DATABASE_URL: '' }, 'start', { readyMs: 90_000 });
    let stopped = false;
    try {
      const token = (await run(process.execPath, [bin, 'admin', 'bootstrap', '--email', 'second-start@example.test'], { env: env() })).stdout.trim();
      const pg0 = await postmasterPid(dataDir);
      const since = new Date(Date.now() - 50);
      const logBefore = first.output().length;
      const bare = await nodeStartMs();
      const t0 = Date.now();
      const err = await run(process.execPath, [bin, 'start'], { env: { ...env(), PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info' }, timeout: 15_000 }).then(
        () => null,
        (x: { code: number; stdout: string; stderr: string }) => x,
      );
      const ms = Date.now() - t0;
      expect(err?.code, err?.stderr).to.equal(1);
      // Measured beside a bare Node start, which alone can take a second on a loaded machine.
      expect(ms - bare, `exited after ${ms} ms (a bare node start: ${bare} ms)`).to.be.below(2000);
      expect(err!.stderr.trim().split('\n')).to.deep.equal([
        `error: another svc-server (pid ${first.proc.pid}) is running on the data directory ${dataDir}: stop it first, or give this one a data directory of its own (SVC_DATA_DIR); 'svc-server migrate' and 'admin' work beside it`,
      ]);
      expect(err!.stdout, 'it logged nothing: no database, no worker, no listener').to.equal('');
      expect(await jobsSince(dataDir, since)).to.deep.equal([]);
      const during = first.output().slice(logBefore);
      expect(warnings(during)).to.deep.equal([]);
      expect(during).to.not.match(/job/i);
      expect(await postmasterPid(dataDir), 'the first one\'s postmaster, untouched').to.equal(pg0);
      expect((await client(first.url, token).get('/v1/accounts/me')).body.user.email).to.equal('second-start@example.test');

      const logAtStop = first.output().length;
      expect(await first.stop()).to.equal(0);
      stopped = true;
      expect(warnings(first.output().slice(logAtStop)), 'a quiet stop').to.deep.equal([]);
      expect(existsSync(path.join(dataDir, 'server.lock')), 'the lock goes with the server').to.equal(false);
    } finally {
      if (!stopped) await first.stop();
      await rm(dataDir, { recursive: true, force: true });
      dataDir = outer;
    }
  });

  it('a start whose port is taken exits 1 before anything starts, saying to set PORT', async () => {
    const blocker = net.createServer();
    await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', r));
    const port = (blocker.address() as net.AddressInfo).port;
    try {
      const err = await run(process.execPath, [bin, 'start'], { env: { ...env(), PORT: String(port), HOST: '127.0.0.1' } }).then(
        () => null,
        (x: { code: number; stderr: string }) => x,
      );
      expect(err?.code, err?.stderr).to.equal(1);
      // Said before anything started (no database opened, no worker), with what to set.
      expect(err?.stderr).to.equal(`error: port ${port} on 127.0.0.1 is in use (another svc-server, or another program): set PORT to a free port (e.g. PORT=${port + 1})\n`);
      expect(existsSync(path.join(dataDir, 'server.lock')), 'its lock released').to.equal(false);
      const pid = await postmasterPid(dataDir).catch(() => 0);
      expect(pid === 0 || !alive(pid), 'no postmaster left behind').to.equal(true);
    } finally {
      await new Promise((r) => blocker.close(r));
    }
  });

  it('refuses a bad configuration with exit 2 and one line naming the variable', async () => {
    const err = await run(process.execPath, [bin, 'migrate'], { env: { ...env(), PORT: 'eighty' } }).then(
      () => null,
      (e: { code: number; stderr: string }) => e,
    );
    expect(err?.code).to.equal(2);
    expect(err?.stderr).to.match(/PORT/);
  });

  it('exits 2 on an unknown command', async () => {
    const err = await run(process.execPath, [bin, 'frobnicate'], { env: env() }).then(
      () => null,
      (e: { code: number; stderr: string }) => e,
    );
    expect(err?.code).to.equal(2);
    expect(err?.stderr).to.match(/^error: /);
  });
});
