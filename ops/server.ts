import type http from 'node:http';
import type { Config } from '../infra/config.js';
import { openDatabase, type Database } from '../infra/db/database.js';
import { migrate } from '../infra/db/migrate.js';
import type { Logger } from '../lib/logger.js';
import { startQueue, type Queue } from '../infra/queue.js';
import { loadKeyring, secretBox } from '../infra/secret-box.js';
import { createEngine } from '../infra/git/engine.js';
import { createProjectRepos } from '../infra/git/project-repos.js';
import { createCrCommandPath } from '../services/change-requests/command-path.js';
import { repoUrlPolicy } from '../infra/git/url-policy.js';
import { reposDirOf } from '../infra/git/managed-repo.js';
import { CR_MERGE } from '../services/change-requests/merge.js';
import { APP_DEPLOY } from '../services/apps/sync.js';
import { createWorkerMetrics, type RunningJob } from '../workers/supervisor.js';
import { SESSION_QUEUES } from '../workers/sessions.js';
import { MANIFEST_SYNC, enqueueMovedSync } from '../workers/manifest.js';
import { createManifestFollower } from '../services/manifest/follow.js';
import type { Core, Running } from './wiring/core.js';
import { wireSessions } from './wiring/sessions.js';
import { wireManifest } from './wiring/manifest.js';
import { wireMerges } from './wiring/merges.js';
import { wireChecks } from './wiring/checks.js';
import { CHECK_QUEUES } from '../services/checks/deps.js';
import { MQ_QUEUES } from '../services/merge-queue/deps.js';
import { wireChannels } from './wiring/channels.js';
import { wireMaintenance } from './wiring/maintenance.js';
import { wireLlmLedger } from './wiring/llm-ledger.js';
import { wireInsights } from './wiring/insights.js';
import { listenHttp } from './wiring/http.js';

export interface ServerOptions {
  config: Config;
  logger: Logger;
  roles: { api: boolean; worker: boolean };
  /** An already-open database (tests); otherwise opened from the config. */
  database?: Database;
  /** Merge jobs run at once by this process's worker (default SVC_MERGE_CONCURRENCY). */
  mergeConcurrency?: number;
}

export interface RunningServer {
  url: string;
  port: number;
  /** The HTTP server (tests check every response it sends against the OpenAPI document). */
  httpServer: http.Server;
  database: Database;
  queue: Queue;
  /** This process's trigger scheduler (worker role, SVC_SCHEDULER on). */
  scheduler?: RunningJob;
  stop(): Promise<void>;
}

/**
 * `svc-server start` (both roles), `api` or `worker`: migrations first, then the queue,
 * each feature's wiring (ops/wiring/*), the HTTP server and the session workers. `stop`
 * drains: HTTP, every feature's intake (in start order), the queue, every feature's
 * resources (in reverse order), the database.
 */
export async function startServer(opts: ServerOptions): Promise<RunningServer> {
  const { config, logger } = opts;
  const database = opts.database ?? (await openDatabase(config, logger));
  // A start that fails half-way (the port taken, a bad key) stops what it started, its
  // embedded PostgreSQL included, instead of leaving it running behind an exited process.
  const undo: Array<() => Promise<unknown>> = [];
  if (!opts.database) undo.push(() => database.close());
  try {
    return await startOn(opts, database, undo);
  } catch (err) {
    for (const u of undo.reverse()) await u().catch((e: unknown) => logger.warn({ err: e }, 'cleanup after a failed start'));
    throw err;
  }
}

async function startOn(opts: ServerOptions, database: Database, undo: Array<() => Promise<unknown>>): Promise<RunningServer> {
  const { config, logger, roles } = opts;
  const { db } = database;
  await migrate(db, { logger });
  const secrets = secretBox(await loadKeyring({ envKey: config.SVC_SECRET_KEY, dataDir: config.dataDir }));
  const engine = await createEngine(config.SVC_GIT_ENGINE);
  // managed repositories: their root is SVC_REPOS_DIR or <data dir>/repos.
  // The manifest in force follows the default branch: every tip read reports to the follower.
  const follower = createManifestFollower({ db, logger, enqueue: (projectId, sha, reason) => enqueueMovedSync(queue)(projectId, sha, reason) });
  const repos = createProjectRepos({ dataDir: config.dataDir, reposDir: reposDirOf(config), engine, secrets, logger, policy: repoUrlPolicy(config), onTips: follower.tipsRead });
  const queue = await startQueue(db, logger, { queues: [CR_MERGE, ...SESSION_QUEUES, MANIFEST_SYNC, APP_DEPLOY, ...CHECK_QUEUES, ...MQ_QUEUES] });
  undo.push(() => queue.stop());
  const core: Core = { config, logger, roles, db, secrets, repos, queue, crCommands: createCrCommandPath(db), workerMetrics: createWorkerMetrics() };

  // The API URL sandboxes use is known once the HTTP server listens (PORT=0 in tests).
  let apiPort = config.PORT;
  const sessions = wireSessions(core, { listenPort: () => apiPort });
  const manifest = await wireManifest(core, sessions.deps, sessions.appProvider);
  await wireMerges(core, opts.mergeConcurrency);
  const channels = wireChannels(core);
  const features: Running[] = [sessions, manifest, channels, wireMaintenance(core), wireLlmLedger(core), wireInsights(core), wireChecks(core, sessions.appProvider, sessions.deps)];
  // From here a failed start drains as stop() below does: intake, queue, resources.
  undo.pop();
  undo.push(async () => {
    for (const f of features) await f.stop?.();
    await queue.stop();
    for (const f of [...features].reverse()) await f.close?.();
  });

  const httpServer = await listenHttp(core, { sessions: sessions.deps, spawnSession: manifest.spawnSession, gateway: sessions.gateway });
  undo.push(() => httpServer.stop());
  const { port } = httpServer;
  if (roles.api) apiPort = port;
  logger.info({ port, roles, engine: engine.name, embedded_db: database.embedded }, 'svc-server listening');
  await sessions.startWorkers();

  let stopping: Promise<void> | undefined;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    httpServer: httpServer.server,
    database,
    queue,
    ...(manifest.scheduler ? { scheduler: manifest.scheduler } : {}),
    stop() {
      stopping ??= (async () => {
        await httpServer.stop();
        for (const f of features) await f.stop?.();
        await queue.stop();
        for (const f of [...features].reverse()) await f.close?.();
        if (!opts.database) await database.close();
        logger.info('svc-server stopped');
      })();
      return stopping;
    },
  };
}
