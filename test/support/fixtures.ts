/**
 * Mocha global fixtures, run once in the main process before any parallel worker starts:
 * one embedded PostgreSQL cluster for the whole run, and a template database with every
 * migration applied. Each test file clones the template (test/support/db.ts), so files
 * run in parallel without sharing rows.
 */
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { startEmbeddedPostgres, type EmbeddedPostgres } from '../../infra/db/embedded.js';
import { createDb } from '../../infra/db/db.js';
import { migrate } from '../../infra/db/migrate.js';
import { tryLoadNodeGit } from '../../infra/git/engine-libgit2.js';
import { takeViolations } from './response-contract.js';
import { sweepTestSandboxes } from './leftovers.js';

export const TEMPLATE_DB = 'svc_test_template';

let cluster: EmbeddedPostgres | undefined;
let dir: string | undefined;

export async function mochaGlobalSetup(): Promise<void> {
  if (process.env.SVC_TEST_PG_URL) return; // an outer runner provides the cluster
  dir = await mkdtemp(path.join(os.tmpdir(), 'svc-test-pg-'));
  await chmod(dir, 0o755); // the postmaster runs as `postgres` and must traverse it
  cluster = await startEmbeddedPostgres(dir);
  const admin = new pg.Client(cluster.url());
  await admin.connect();
  await admin.query(`CREATE DATABASE ${TEMPLATE_DB}`);
  await admin.end();
  const db = createDb(cluster.url(TEMPLATE_DB), { max: 1 });
  await migrate(db);
  await db.close();
  process.env.SVC_TEST_PG_URL = cluster.url();
}

export async function mochaGlobalTeardown(): Promise<void> {
  // The summary says plainly when the libgit2 engine's suites did not run (CI=1 fails them instead).
  const ng = await tryLoadNodeGit();
  if (!ng.nodegit) {
    process.stdout.write(`\n  NOTE: the libgit2 engine was NOT tested in this run (${ng.reason}); only the git engine was.\n\n`);
  }
  await cluster?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
}

/**
 * Root hooks (every worker): a test whose requests got a response that breaks the OpenAPI
 * document fails here, with each request and problem (test/support/response-contract.ts).
 * The sandboxes of a test's servers go with them: after each test, those of servers that
 * stopped are killed, after each file those of every server it started; one that survives
 * SIGKILL fails the run (test/support/leftovers.ts).
 */
export const mochaHooks = {
  async afterEach(): Promise<void> {
    const problems = takeViolations();
    await sweepTestSandboxes();
    if (problems.length) throw new Error(`responses that break the OpenAPI document (contracts/):\n  ${problems.join('\n  ')}`);
  },
  async afterAll(): Promise<void> {
    await sweepTestSandboxes({ all: true });
  },
};
