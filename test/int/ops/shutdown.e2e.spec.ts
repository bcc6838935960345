import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { rm } from 'node:fs/promises';
import path from 'node:path';
import { projectRoot } from '../../../lib/paths.js';
import { freePort } from '../../support/server.js';
import { spawnTestServer, TEST_ENV, traversableTempDir } from '../../support/server.js';

/**
 * SIGTERM on the embedded database: the queue and the pools close before postgres stops,
 * so a shutdown logs nothing at warn or error level (it used to log "queue error" and
 * "idle database connection failed": the pools' end() resolves before their connections
 * close, and postgres then terminated them). Several cycles, as the race was not every time.
 */
describe('svc-server shutdown on SIGTERM (embedded database, real processes)', function () {
  this.timeout(120_000);
  let dataDir: string;
  before(async () => {
    dataDir = await traversableTempDir('svc-shutdown-');
  });
  after(async () => {
    await rm(dataDir, { recursive: true, force: true });
  });

  it('exits 0 with no warn- or error-level line after "shutting down", cycle after cycle', async () => {
    for (let cycle = 0; cycle < 3; cycle++) {
      const server = await spawnTestServer({ SVC_DATA_DIR: dataDir, LOG_LEVEL: 'info', DATABASE_URL: '' });
      // Several pooled connections open (and idle) when the signal comes.
      await Promise.all(Array.from({ length: 8 }, () => fetch(`${server.url}/readyz`).then((r) => r.arrayBuffer())));
      const code = await server.stop();
      const lines = server.output().split('\n').filter(Boolean);
      const from = lines.findIndex((l) => l.includes('"msg":"shutting down"'));
      expect(from, server.output()).to.be.greaterThan(-1);
      const noisy = lines.slice(from).filter((l) => {
        try {
          return (JSON.parse(l) as { level: number }).level >= 40;
        } catch {
          return true; // anything that is not a log record (a stack trace) is noise too
        }
      });
      expect({ cycle, code, noisy }).to.deep.equal({ cycle, code: 0, noisy: [] });
      expect(lines[lines.length - 1]).to.contain('"msg":"svc-server stopped"');
    }
  });
  it('a SIGTERM while the server is still starting stops it cleanly once started (exit 0), not with the signal', async () => {
    const port = await freePort();
    const proc = spawn(process.execPath, [path.join(projectRoot, 'dist/ops/svc-server.js'), 'start'], {
      env: { ...process.env, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'info', ...TEST_ENV, SVC_DATA_DIR: dataDir, DATABASE_URL: '' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    const exited = new Promise<{ code: number | null; signal: string | null }>((r) => proc.once('exit', (code, signal) => r({ code, signal })));
    // The first line the start logs (the embedded database is up; migrations, queue,
    // workers and the listener still to come): the signal lands mid-start.
    await new Promise<void>((resolve) => {
      const onData = (c: Buffer) => {
        out += c.toString();
        if (out.includes('"msg":"embedded postgres started"')) {
          proc.stdout!.off('data', onData);
          proc.stdout!.on('data', (more: Buffer) => (out += more.toString()));
          resolve();
        }
      };
      proc.stdout!.on('data', onData);
      proc.stderr!.on('data', (c: Buffer) => (out += c.toString()));
    });
    proc.kill('SIGTERM');
    expect(await exited, out).to.deep.equal({ code: 0, signal: null });
    expect(out).to.contain('"msg":"shutting down"').and.contain('"msg":"svc-server stopped"');
  });
});
