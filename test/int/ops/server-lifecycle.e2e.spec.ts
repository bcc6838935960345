import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { readFile, rm } from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { promisify } from 'node:util';
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

  it('a start that fails (its port taken) exits 1 and stops the embedded PostgreSQL it started', async () => {
    const blocker = net.createServer();
    await new Promise<void>((r) => blocker.listen(0, '127.0.0.1', r));
    const port = (blocker.address() as net.AddressInfo).port;
    try {
      const err = await run(process.execPath, [bin, 'start'], { env: { ...env(), PORT: String(port), HOST: '127.0.0.1' } }).then(
        () => null,
        (x: { code: number; stderr: string }) => x,
      );
      expect(err?.code, err?.stderr).to.equal(1);
      expect(err?.stderr).to.match(/EADDRINUSE|in use/);
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
