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
import { repoUrlPolicy } from '../infra/git/url-policy.js';
import { reposDirOf } from '../infra/git/managed-repo.js';
import express from 'express';
import { createApp } from '../api/app.js';
import { healthRoutes } from '../api/routes/health.js';
import { createEventsFeed } from '../api/routes/events-feed.js';
import { clientErrorHandler } from '../api/errors.js';
import { createMetrics } from '../api/metrics.js';
import { crMergeHandler } from '../workers/cr-merge.js';
import { CR_MERGE } from '../infra/change-requests/merge.js';
import { APP_DEPLOY } from '../infra/apps/sync.js';
import { reconcileMergeAttempts } from '../infra/change-requests/merge.js';
import { startChannelDispatcher, type ChannelDispatcher } from '../infra/channels/dispatcher.js';
// --- sessions (issue 10) ---
import { createSandboxProvider } from '../infra/sandbox/registry.js';
import type { SessionDeps } from '../infra/sessions/deps.js';
import { SESSION_QUEUES, startSessionWorkers } from '../workers/sessions.js';
import { sessionUpgradeHandler } from '../api/routes/session-proxy.js';
// --- manifest, secrets, triggers, apps (issue 12) ---
import { MANIFEST_SYNC, appDeployHandler, manifestSyncHandler, onMergedResync } from '../workers/manifest.js';
import { enqueueAllManifestSyncs, type ManifestDeps } from '../infra/manifest/sync.js';
import { createScheduler, type Scheduler } from '../infra/triggers/scheduler.js';
import type { SpawnSession } from '../infra/triggers/service.js';
import { resumeApps } from '../infra/apps/resume.js';
import { stopOwnedApps } from '../infra/apps/runner.js';
import { createSession } from '../infra/sessions/service.js';
import { sandboxSecrets } from '../infra/secrets/sandbox-env.js';
import { pushSecretsToSandboxes } from '../infra/sessions/secrets-push.js';

export interface ServerOptions {
  config: Config;
  logger: Logger;
  roles: { api: boolean; worker: boolean };
  /** An already-open database (tests); otherwise opened from the config. */
  database?: Database;
  /** Merge jobs run at once by this process's worker. */
  mergeConcurrency?: number;
  /** Extra environment for every sandbox this process starts (tests). */
  sandboxEnv?: Record<string, string>;
  /** The project's secrets for sandboxes (the secrets feature wires infra/secrets/sandbox-env.ts here). */
  projectSecrets?: SessionDeps['projectSecrets'];
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
  // managed repositories (issue 11): their root is SVC_REPOS_DIR or <data dir>/repos.
  const repos = createProjectRepos({ dataDir: config.dataDir, reposDir: reposDirOf(config), engine, secrets, logger, policy: repoUrlPolicy(config) });
  const queue = await startQueue(db, logger, { queues: [CR_MERGE, ...SESSION_QUEUES, MANIFEST_SYNC, APP_DEPLOY] });

  // --- sessions (issue 10): provider, service deps, workers. The API URL sandboxes use is
  // known once the HTTP server listens (PORT=0 in tests).
  let listenPort = config.PORT;
  const sandboxApiUrl = () =>
    config.SVC_SANDBOX_API_URL?.replace(/\/+$/, '') ??
    (config.SVC_PUBLIC_URL ? `${config.SVC_PUBLIC_URL.replace(/\/+$/, '')}/v1` : `http://127.0.0.1:${listenPort}/v1`);
  const provider = opts.roles.worker ? createSandboxProvider(config, { logger, ...(opts.sandboxEnv ? { extraEnv: opts.sandboxEnv } : {}) }) : undefined;
  // Apps run a command from an exported tree on this host (process, bwrap). When sessions
  // run on docker or kubernetes, apps use bwrap where installed, else process.
  const appProvider =
    provider && (provider.name === 'docker' || provider.name === 'kubernetes')
      ? createSandboxProvider({ ...config, SVC_SANDBOX_PROVIDER: undefined }, { logger, ...(opts.sandboxEnv ? { extraEnv: opts.sandboxEnv } : {}) })
      : provider;
  const sessions: SessionDeps = {
    config, db, logger, secrets, repos, queue, apiUrl: sandboxApiUrl,
    ...(provider ? { provider } : {}),
    projectSecrets: opts.projectSecrets ?? ((projectId) => sandboxSecrets(db, secrets, projectId)),
  };
  let sessionWorkers: { stop(): void } | undefined;
  // --- end sessions
  // --- manifest, secrets, triggers, apps (issue 12) ---
  const manifestDeps: ManifestDeps = { db, repos, logger, enqueueApp: async (job) => void (await queue.enqueue(APP_DEPLOY, job)) };
  let scheduler: Scheduler | undefined;
  // Triggers spawn sessions the same way as an interactive create (plan decision 4).
  const spawnSession: SpawnSession = opts.spawnSession ?? (async (input) => ({ ...(await createSession(sessions, input)) }));
  if (opts.roles.worker) {
    queue.work(MANIFEST_SYNC, 2, manifestSyncHandler(manifestDeps));
    queue.work(APP_DEPLOY, 1, appDeployHandler({ db, repos, logger, box: secrets, dataDir: config.dataDir, ...(appProvider ? { provider: appProvider } : {}), publicHost: config.SVC_APPS_HOST, healthTimeoutMs: config.SVC_APP_HEALTH_TIMEOUT_MS, enabled: config.SVC_APPS }));
    const synced = await enqueueAllManifestSyncs(db, async (project_id) => void (await queue.enqueue(MANIFEST_SYNC, { project_id, reason: 'start' })));
    await resumeApps(db, appProvider, manifestDeps.enqueueApp!);
    if (config.SVC_SCHEDULER) {
      scheduler = createScheduler({ db, repos, logger, intervalMs: config.SVC_SCHEDULER_INTERVAL_MS, spawnSession });
    }
    logger.info({ projects: synced }, 'manifest syncs queued at start');
  }
  // --- end issue 12 ---
  if (opts.roles.worker) {
    const settled = await reconcileMergeAttempts({ db, repos, logger });
    if (settled) logger.warn({ settled }, 'recorded merges published before a crash');
    // Each merge holds one pool connection; keep one for the queue listener and one for the API.
    const concurrency = Math.max(1, Math.min(opts.mergeConcurrency ?? config.SVC_MERGE_CONCURRENCY, (db.pool.options.max ?? 10) - 2));
    queue.work(CR_MERGE, concurrency, crMergeHandler({ db, repos, logger, lockWaitMs: 60_000, onMerged: onMergedResync(queue) }));
    logger.info({ queue: CR_MERGE, concurrency }, 'worker ready');
  }
  // --- ops (issue 14): the chat channels subscriber runs with the workers ---
  let channels: ChannelDispatcher | undefined;
  if (opts.roles.worker && config.SVC_CHANNELS_DISPATCH) {
    channels = startChannelDispatcher({ db, secrets, logger, ...(config.SVC_PUBLIC_URL ? { publicUrl: config.SVC_PUBLIC_URL } : {}) });
  }
  // --- end ops ---

  let server: http.Server | undefined;
  let feed: ReturnType<typeof createEventsFeed> | undefined;
  let port = 0;
  // --- ops (issue 14): a worker-only process still answers /healthz, /readyz and /metrics
  // on PORT, for container health checks and Kubernetes probes. ---
  if (!opts.roles.api) {
    const health = express();
    health.disable('x-powered-by');
    health.use(healthRoutes({ config, db, logger, metrics: createMetrics(), secrets, repos, queue }));
    server = http.createServer(health);
  }
  // --- end ops ---
  if (opts.roles.api) {
    feed = createEventsFeed({ db, logger });
    const apiDeps = { config, db, logger, metrics: createMetrics(), secrets, repos, queue, sessions, spawnSession,
      // Running sandboxes get secret changes through their daemon's POST /svc/env.
      onSecretsChanged: (projectId: string, change: { set: string[]; unset: string[]; revision: number }) =>
        void pushSecretsToSandboxes(sessions, projectId, change).catch((err: Error) => logger.warn({ err: err.message }, 'secrets push failed')) };
    const app = createApp(apiDeps, { feed });
    server = http.createServer(app);
    server.on('upgrade', sessionUpgradeHandler(apiDeps, feed.upgradeHandler(app)));
  }
  if (server) {
    server.on('clientError', clientErrorHandler);
    server.keepAliveTimeout = 65_000;
    await new Promise<void>((resolve, reject) => {
      server!.once('error', reject);
      server!.listen(config.PORT, config.HOST, () => resolve());
    });
    port = (server.address() as AddressInfo).port;
    if (opts.roles.api) listenPort = port;
    logger.info({ port, roles: opts.roles, engine: engine.name, embedded_db: database.embedded }, 'svc-server listening');
  }

  // Session workers start once the API URL sandboxes need is known.
  if (opts.roles.worker) sessionWorkers = await startSessionWorkers(sessions, queue);

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
        sessionWorkers?.stop();
        await scheduler?.stop();
        await channels?.stop();
        await queue.stop();
        await stopOwnedApps();
        await provider?.close?.();
        if (appProvider !== provider) await appProvider?.close?.();
        if (!opts.database) await database.close();
        logger.info('svc-server stopped');
      })();
      return stopping;
    },
  };
}
