/**
 * Per-suite fixtures: each call registers `before`/`after` hooks on the enclosing
 * `describe` and answers an object whose fields are set once its `before` has run, so a
 * spec reads `fx.srv.url` in its tests and holds no setup of its own.
 */
import { rm } from 'node:fs/promises';
import { createTestDb, type TestDb } from './db.js';
import { fixtureRepo, type FixtureRepo } from './repo.js';
import { startTestServer, traversableTempDir, type TestServer } from './server.js';

/** An in-process server and a fixture repo for the suite. */
export function serverAndRepo(opts: Parameters<typeof startTestServer>[0] = {}): { srv: TestServer; repo: FixtureRepo } {
  const fx = {} as { srv: TestServer; repo: FixtureRepo };
  before(async () => {
    fx.srv = await startTestServer(opts);
    fx.repo = await fixtureRepo();
  });
  after(async () => {
    await fx.srv?.stop();
    await fx.repo?.cleanup();
  });
  return fx;
}

/**
 * What a test that spawns `svc-server` processes itself needs: a database, a fixture repo
 * and a data dir the embedded postgres can traverse. `beforeCleanup` runs first in `after`
 * (e.g. to kill sandboxes the processes left).
 */
export function processFixture(
  prefix: string,
  beforeCleanup?: (fx: { db: TestDb; dataDir: string }) => Promise<void>,
): { db: TestDb; repo: FixtureRepo; dataDir: string } {
  const fx = {} as { db: TestDb; repo: FixtureRepo; dataDir: string };
  before(async () => {
    fx.db = await createTestDb();
    fx.repo = await fixtureRepo();
    fx.dataDir = await traversableTempDir(prefix);
  });
  after(async () => {
    if (beforeCleanup && fx.db && fx.dataDir) await beforeCleanup(fx);
    await fx.db?.drop();
    await fx.repo?.cleanup();
    if (fx.dataDir) await rm(fx.dataDir, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 });
  });
  return fx;
}
