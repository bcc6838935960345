import { expect } from 'chai';
import { rm } from 'node:fs/promises';
import { spawnTestServer, traversableTempDir } from '../../support/server.js';

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
});
