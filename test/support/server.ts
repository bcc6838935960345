/**
 * Real servers for tests. `startTestServer` runs the whole server (API + queue + merge
 * worker) in this process on a fresh database; `spawnTestServer` runs `svc-server start`
 * as a child process (crash tests, CLI end-to-end). Both give a user token.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../../infra/config.js';
import { createLogger, silentLogger } from '../../lib/logger.js';
import { bootstrapUser } from '../../services/accounts/service.js';
import { projectRoot } from '../../lib/paths.js';
import { freePort } from '../../lib/net.js';
import { startServer, type RunningServer } from '../../ops/server.js';
import type { Db } from '../../infra/db/db.js';
import { createTestDb, type TestDb } from './db.js';
import { serveOverHttp } from './http-remote.js';
import { fixtureRepo, type FixtureRepo } from './repo.js';
import { client } from './http.js';
import { serverStarted, serverStopped } from './leftovers.js';
import { collectFrom, markWatched, stopCollecting, takeViolations, watchResponses } from './response-contract.js';
import { until } from './wait.js';

/**
 * Tests run against repositories on this machine (file:// and loopback http): local
 * networks are allowed, as on a single-tenant install. Specs of the policy override it.
 */
export const TEST_ENV: Record<string, string> = {
  // The session tests run on the process provider; bwrap, docker and kubernetes have their own.
  SVC_SANDBOX_PROVIDER: 'process',
  // ... which isolates nothing, and most specs make a second account: allowed here, refused by default.
  SVC_ALLOW_UNISOLATED: '1',
  SVC_REPO_ALLOW_LOCAL_NETWORKS: '1',
  SVC_REPO_ALLOW_HTTP_CREDENTIALS: '1',
  SVC_AUTH_FAILURE_LIMIT: '1000000',
  // Sessions have a model by default (prompts are refused without one): a gateway whose
  // upstream is the discard port. Specs that need a model that answers start the scripted
  // one (scripted-model.ts); specs of "no model" unset these ('' is unset).
  SVC_LLM_UPSTREAM_URL: 'http://127.0.0.1:9/v1',
  SVC_LLM_UPSTREAM_KEY: 'test-upstream-key-never-in-a-sandbox',
  SVC_LLM_MODEL: 'test-model',
  // Many servers share this machine: each its own metrics port (the default is one fixed port).
  SVC_METRICS_ADDR: '127.0.0.1:0',
};

export interface TestServer {
  url: string;
  /** A user token (owner of the account `accountId`). */
  token: string;
  userId: string;
  accountId: string;
  db: TestDb;
  dataDir: string;
  /** The listening server of the current start (specs that read its app's routes). */
  readonly httpServer: import('node:http').Server;
  /** Another user token for a fresh user in another account. */
  newUser(email: string): Promise<{ token: string; userId: string; accountId: string }>;
  /**
   * Stops this server (how long that took) and starts another on the same database and
   * data directory, as an operator's restart: `url` changes (a new port). `env`: variables
   * the next start sees on top of the first's (an operator's configuration change).
   */
  restart(env?: Record<string, string>): Promise<{ stopMs: number }>;
  stop(): Promise<void>;
}

/**
 * A public (non-loopback) SVC_PUBLIC_URL requires SVC_PREVIEW_DOMAIN at start-up; specs
 * that set one for links alone get a preview domain nobody resolves (`.invalid`).
 */
function previewDomainFor(env: Record<string, string> = {}): Record<string, string> {
  const pub = env.SVC_PUBLIC_URL ? new URL(env.SVC_PUBLIC_URL).hostname : '';
  return pub && !/^(localhost|.*\.localhost|127\.\d+\.\d+\.\d+|\[::1\])$/.test(pub) ? { SVC_PREVIEW_DOMAIN: 'preview.invalid' } : {};
}

export async function startTestServer(
  opts: { env?: Record<string, string>; mergeConcurrency?: number; poolSize?: number; /** What the server is given instead of the test's Db (e.g. a counting wrapper). */ wrapDb?: (db: Db) => Db } = {},
): Promise<TestServer> {
  const db = await createTestDb(opts.poolSize ? { max: opts.poolSize } : {});
  const dataDir = await mkdtemp(path.join(os.tmpdir(), 'svc-test-data-'));
  const envOf = (over: Record<string, string> = {}) => ({ PORT: '0', HOST: '127.0.0.1', SVC_DATA_DIR: dataDir, LOG_LEVEL: 'silent', SVC_ALLOW_FILE_REPOS: '1', ...TEST_ENV, ...previewDomainFor(opts.env), ...opts.env, ...over });
  let config = loadConfig(envOf());
  const boot = () =>
    startServer({
      config,
      // SVC_TEST_LOG=debug shows the server's logs while debugging a test.
      logger: process.env.SVC_TEST_LOG ? createLogger({ level: process.env.SVC_TEST_LOG, pretty: false, destination: process.stderr }) : silentLogger,
      roles: { api: true, worker: true },
      database: { db: opts.wrapDb ? opts.wrapDb(db.db) : db.db, url: db.url, embedded: false, close: async () => {} },
      ...(opts.mergeConcurrency ? { mergeConcurrency: opts.mergeConcurrency } : {}),
    });
  let server: RunningServer;
  try {
    server = await boot();
  } catch (err) {
    await db.drop();
    throw err;
  }
  watchResponses(server.httpServer);
  serverStarted(dataDir);
  const first = await bootstrapUser(db.db, { email: 'owner@example.test', name: 'Owner' });
  const srv: TestServer = {
    url: server.url,
    token: first.token.token,
    userId: first.user_id,
    accountId: first.account_id,
    db,
    dataDir,
    get httpServer() {
      return server.httpServer;
    },
    async newUser(email) {
      const u = await bootstrapUser(db.db, { email });
      return { token: u.token.token, userId: u.user_id, accountId: u.account_id };
    },
    async restart(env) {
      const t0 = Date.now();
      await server.stop();
      if (env) config = loadConfig(envOf(env));
      const stopMs = Date.now() - t0;
      server = await boot();
      watchResponses(server.httpServer);
      srv.url = server.url;
      return { stopMs };
    },
    async stop() {
      await server.stop();
      serverStopped(dataDir);
      await db.drop();
      await rm(dataDir, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 }); // a sandbox killed just before may still be exiting
      // Responses after the last test's check (cleanup in `after` hooks) are checked too.
      const late = takeViolations();
      if (late.length) throw new Error(`responses that break the OpenAPI document:\n  ${late.join('\n  ')}`);
    },
  };
  return srv;
}

export { freePort };

export interface SpawnedServer {
  url: string;
  proc: ChildProcess;
  output: () => string;
  /** SIGTERM, and wait for the exit code. */
  stop(): Promise<number | null>;
}

/** `svc-server <cmd>` as a child process, ready when /readyz answers 200. */
/** `readyMs`: how long it may take to answer /readyz (a fresh embedded cluster runs initdb first). */
/** `launcher`: a command the server runs under (e.g. `prlimit --nofile=256:256 --`). */
export async function spawnTestServer(env: Record<string, string>, cmd = 'start', opts: { readyMs?: number; launcher?: string[] } = {}): Promise<SpawnedServer> {
  const port = await freePort();
  // Its responses are checked against the OpenAPI document inside it; problems come back through this file.
  const contractLog = path.join(os.tmpdir(), `svc-contract-${process.pid}-${port}.jsonl`);
  collectFrom(contractLog);
  markWatched(port);
  const [file, ...pre] = [...(opts.launcher ?? []), process.execPath];
  const proc = spawn(file!, [...pre, '--import', path.join(projectRoot, 'dist/test/support/contract-preload.js'), path.join(projectRoot, 'dist/ops/svc-server.js'), cmd], {
    env: { ...process.env, PORT: String(port), HOST: '127.0.0.1', LOG_LEVEL: 'info', SVC_ALLOW_FILE_REPOS: '1', ...TEST_ENV, ...env, SVC_TEST_CONTRACT_LOG: contractLog },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const dataDir = env.SVC_DATA_DIR ? path.resolve(env.SVC_DATA_DIR) : undefined;
  if (dataDir) serverStarted(dataDir);
  let out = '';
  proc.stdout!.on('data', (c: Buffer) => (out += c.toString()));
  proc.stderr!.on('data', (c: Buffer) => (out += c.toString()));
  const exited = new Promise<number | null>((r) => proc.once('exit', (code) => r(code)));
  const url = `http://127.0.0.1:${port}`;
  const ready = await until(
    () => proc.exitCode !== null || fetch(`${url}/readyz`).then((r) => r.ok, () => false),
    'svc-server ready',
    { timeoutMs: opts.readyMs ?? 30_000, maxIntervalMs: 50 },
  ).then(
    () => true,
    () => false,
  );
  if (proc.exitCode !== null) throw new Error(`svc-server exited early (${proc.exitCode}):\n${out}`);
  if (!ready) {
    proc.kill('SIGKILL');
    throw new Error(`svc-server did not become ready:\n${out}`);
  }
  return {
    url,
    proc,
    output: () => out,
    async stop() {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill('SIGTERM');
      const code = await exited;
      if (dataDir) serverStopped(dataDir);
      const late = takeViolations();
      stopCollecting(contractLog);
      markWatched(port, false);
      await rm(contractLog, { force: true });
      if (late.length) throw new Error(`responses that break the OpenAPI document:\n  ${late.join('\n  ')}`);
      return code;
    },
  };
}

/** A temp dir the embedded postgres (running as `postgres` when we are root) can traverse. */
export async function traversableTempDir(prefix: string): Promise<string> {
  const dir = await mkdtemp(path.join(os.tmpdir(), prefix));
  await chmod(dir, 0o755);
  return dir;
}

export interface TestProject {
  srv: TestServer;
  repo: FixtureRepo;
  /** A client with the owner's token. */
  api: ReturnType<typeof client>;
  /** `/v1/projects/<slug>/change-requests` */
  base: string;
}

/**
 * A CR that needs a merge commit: `main` moves on (`moved.txt`), `topic` branches from
 * before that move (`topic.txt`), and a CR of `topic` into `main` is opened.
 */
export async function openDivergedCr({ repo, api, base }: TestProject, title: string): Promise<{ cr: { cr_id: string; number: number }; head: string }> {
  await repo.commit('main', { 'moved.txt': 'base moved\n' });
  const head = await repo.commit('topic', { 'topic.txt': 'work\n' }, { from: 'main~1' });
  const cr = (await api.post(base, { title, head_ref: 'topic' })).body.change_request;
  return { cr, head };
}

/** A server, a fixture repo and a project on it for the length of `fn`; both cleaned up after. */
export async function withProject<T>(
  /** `over: 'http'`: the project's repo_url is the fixture served by `git http-backend` (its hooks run there). */
  opts: { slug: string; env?: Record<string, string>; poolSize?: number; mergeConcurrency?: number; over?: 'file' | 'http' },
  fn: (p: TestProject) => Promise<T>,
): Promise<T> {
  const { slug, over, ...serverOpts } = opts;
  const srv = await startTestServer(serverOpts);
  const repo = await fixtureRepo();
  const http = over === 'http' ? await serveOverHttp(repo) : null;
  try {
    const api = client(srv.url, srv.token);
    const created = await api.post('/v1/projects', { name: slug, slug, repo_url: http?.url ?? repo.url });
    if (created.status !== 201) throw new Error(`could not create project ${slug}: ${JSON.stringify(created.body)}`);
    return await fn({ srv, repo, api, base: `/v1/projects/${slug}/change-requests` });
  } finally {
    await http?.close();
    await srv.stop();
    await repo.cleanup();
  }
}
