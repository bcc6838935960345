import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Config } from '../infra/config.js';
import { openDatabase, type Database } from '../infra/database.js';
import { migrate } from '../infra/db/migrate.js';
import type { Logger } from '../infra/logger.js';
import { startQueue, type Queue } from '../infra/queue.js';
import { loadKeyring, secretBox } from '../infra/secrets.js';
import { createEngine } from '../infra/git/engine.js';
import { createProjectRepos } from '../infra/change-requests/repos.js';
import { createApp } from '../api/app.js';
import { createEventsFeed } from '../api/routes/events-feed.js';
import { clientErrorHandler } from '../api/errors.js';
import { createMetrics } from '../api/metrics.js';
import { CR_MERGE, crMergeHandler } from '../workers/cr-merge.js';
import { reconcileMergeAttempts } from '../infra/change-requests/merge.js';
// --- manifest, secrets, triggers, apps (issue 12) ---
import { APP_DEPLOY, MANIFEST_SYNC, appDeployHandler, manifestSyncHandler, onMergedResync } from '../workers/manifest.js';
import { enqueueAllManifestSyncs, type ManifestDeps } from '../infra/manifest/sync.js';
import { createScheduler, type Scheduler } from '../infra/triggers/scheduler.js';
import type { SpawnSession } from '../infra/triggers/service.js';
import { resumeApps } from '../infra/apps/resume.js';
import { stopOwnedApps } from '../infra/apps/runner.js';

export interface ServerOptions {
  config: Config;
  logger: Logger;
  roles: { api: boolean; worker: boolean };
  /** An already-open database (tests); otherwise opened from the config. */
  database?: Database;
  /** Merge jobs run at once by this process's worker. */
  mergeConcurrency?: number;
  /** The sessions capability's spawner (plan decision 4); absent: trigger fires record 'sessions unavailable'. */
  spawnSession?: SpawnSession;
}

export interface RunningServer {
  url: string;
  port: number;
  database: Database;
  queue: Queue;
  /** This process's trigger scheduler (worker role, SVC_SCHEDULER on). */
  scheduler?: Scheduler;
  stop(): Promise<void>;
}

/**
 * `svc-server start` (both roles), `api` or `worker`: migrations first, then the queue,
 * the workers and the HTTP server. `stop` drains in reverse order.
 */
export async function startServer(opts: ServerOptions): Promise<RunningServer> {
  const { config, logger } = opts;
  const database = opts.database ?? (await openDatabase(config, logger));
  const { db } = database;
  await migrate(db, { logger });
  const secrets = secretBox(await loadKeyring({ envKey: config.SVC_SECRET_KEY, dataDir: config.dataDir }));
  const engine = await createEngine(config.SVC_GIT_ENGINE);
  const repos = createProjectRepos({ dataDir: config.dataDir, engine, secrets, logger });
  const queue = await startQueue(db, logger, { queues: [CR_MERGE, MANIFEST_SYNC, APP_DEPLOY] });
  // --- manifest, secrets, triggers, apps (issue 12) ---
  const manifestDeps: ManifestDeps = { db, repos, logger, enqueueApp: async (job) => void (await queue.enqueue(APP_DEPLOY, job)) };
  let scheduler: Scheduler | undefined;
  // Merge time: when the sessions capability is wired, pass its spawner here, e.g.
  // `opts.spawnSession ?? ((i) => createSession(sessionDeps, i))` (plan decision 4).
  const spawnSession: SpawnSession | undefined = opts.spawnSession;
  if (opts.roles.worker) {
    queue.work(MANIFEST_SYNC, 2, manifestSyncHandler(manifestDeps));
    queue.work(APP_DEPLOY, 1, appDeployHandler({ db, repos, logger, box: secrets, dataDir: config.dataDir, publicHost: config.SVC_APPS_HOST, healthTimeoutMs: config.SVC_APP_HEALTH_TIMEOUT_MS, enabled: config.SVC_APPS }));
    const synced = await enqueueAllManifestSyncs(db, async (project_id) => void (await queue.enqueue(MANIFEST_SYNC, { project_id, reason: 'start' })));
    await resumeApps(db, manifestDeps.enqueueApp!);
    if (config.SVC_SCHEDULER) {
      scheduler = createScheduler({ db, repos, logger, intervalMs: config.SVC_SCHEDULER_INTERVAL_MS, ...(spawnSession ? { spawnSession } : {}) });
    }
    logger.info({ projects: synced }, 'manifest syncs queued at start');
  }
  // --- end issue 12 ---
  if (opts.roles.worker) {
    const settled = await reconcileMergeAttempts({ db, repos, logger });
    if (settled) logger.warn({ settled }, 'recorded merges published before a crash');
    // Each merge holds one pool connection; keep one for the queue listener and one for the API.
    const concurrency = Math.max(1, Math.min(opts.mergeConcurrency ?? 4, (db.pool.options.max ?? 10) - 2));
    queue.work(CR_MERGE, concurrency, crMergeHandler({ db, repos, logger, onMerged: onMergedResync(queue) }));
  }

  let server: http.Server | undefined;
  let feed: ReturnType<typeof createEventsFeed> | undefined;
  let port = 0;
  if (opts.roles.api) {
    feed = createEventsFeed({ db, logger });
    const app = createApp({ config, db, logger, metrics: createMetrics(), secrets, repos, queue, ...(spawnSession ? { spawnSession } : {}) }, { feed });
    server = http.createServer(app);
    server.on('upgrade', feed.upgradeHandler(app));
    server.on('clientError', clientErrorHandler);
    server.keepAliveTimeout = 65_000;
    await new Promise<void>((resolve, reject) => {
      server!.once('error', reject);
      server!.listen(config.PORT, config.HOST, () => resolve());
    });
    port = (server.address() as AddressInfo).port;
    logger.info({ port, engine: engine.name, embedded_db: database.embedded }, 'svc-server listening');
  }

  let stopping: Promise<void> | undefined;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    database,
    queue,
    ...(scheduler ? { scheduler } : {}),
    stop() {
      stopping ??= (async () => {
        if (server) {
          const closed = new Promise<void>((r) => server!.close(() => r()));
          server.closeIdleConnections();
          setTimeout(() => server!.closeAllConnections(), 5000).unref();
          await feed?.close();
          await closed;
        }
        await scheduler?.stop();
        await queue.stop();
        await stopOwnedApps();
        if (!opts.database) await database.close();
        logger.info('svc-server stopped');
      })();
      return stopping;
    },
  };
}
