import http from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Config } from '../infra/config.js';
import { openDatabase, type Database } from '../infra/database.js';
import { migrate } from '../infra/db/migrate.js';
import type { Logger } from '../infra/logger.js';
import { startQueue, type Queue } from '../infra/queue.js';
import { loadSecretKey, secretBox } from '../infra/secrets.js';
import { createEngine } from '../infra/git/engine.js';
import { createProjectRepos } from '../infra/change-requests/repos.js';
import { createApp } from '../api/app.js';
import { createEventsFeed } from '../api/routes/events-feed.js';
import { clientErrorHandler } from '../api/errors.js';
import { createMetrics } from '../api/metrics.js';
import { CR_MERGE, crMergeHandler } from '../workers/cr-merge.js';
import { reconcileMergeAttempts } from '../infra/change-requests/merge.js';
// --- sessions (issue 10) ---
import { createSandboxProvider } from '../infra/sandbox/registry.js';
import type { SessionDeps } from '../infra/sessions/deps.js';
import { SESSION_QUEUES, startSessionWorkers } from '../workers/sessions.js';
import { sessionUpgradeHandler } from '../api/routes/session-proxy.js';

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
}

export interface RunningServer {
  url: string;
  port: number;
  database: Database;
  queue: Queue;
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
  const secrets = secretBox(await loadSecretKey({ envKey: config.SVC_SECRET_KEY, dataDir: config.dataDir }));
  const engine = await createEngine(config.SVC_GIT_ENGINE);
  const repos = createProjectRepos({ dataDir: config.dataDir, engine, secrets, logger });
  const queue = await startQueue(db, logger, { queues: [CR_MERGE, ...SESSION_QUEUES] });

  // --- sessions (issue 10): provider, service deps, workers. The API URL sandboxes use is
  // known once the HTTP server listens (PORT=0 in tests).
  let listenPort = config.PORT;
  const sandboxApiUrl = () =>
    config.SVC_SANDBOX_API_URL?.replace(/\/+$/, '') ??
    (config.SVC_PUBLIC_URL ? `${config.SVC_PUBLIC_URL.replace(/\/+$/, '')}/v1` : `http://127.0.0.1:${listenPort}/v1`);
  const provider = opts.roles.worker ? createSandboxProvider(config, { logger, ...(opts.sandboxEnv ? { extraEnv: opts.sandboxEnv } : {}) }) : undefined;
  const sessions: SessionDeps = {
    config, db, logger, secrets, repos, queue, apiUrl: sandboxApiUrl,
    ...(provider ? { provider } : {}),
    ...(opts.projectSecrets ? { projectSecrets: opts.projectSecrets } : {}),
  };
  let sessionWorkers: { stop(): void } | undefined;
  // --- end sessions
  if (opts.roles.worker) {
    const settled = await reconcileMergeAttempts({ db, repos, logger });
    if (settled) logger.warn({ settled }, 'recorded merges published before a crash');
    // Each merge holds one pool connection; keep one for the queue listener and one for the API.
    const concurrency = Math.max(1, Math.min(opts.mergeConcurrency ?? 4, (db.pool.options.max ?? 10) - 2));
    queue.work(CR_MERGE, concurrency, crMergeHandler({ db, repos, logger }));
  }

  let server: http.Server | undefined;
  let feed: ReturnType<typeof createEventsFeed> | undefined;
  let port = 0;
  if (opts.roles.api) {
    feed = createEventsFeed({ db, logger });
    const apiDeps = { config, db, logger, metrics: createMetrics(), secrets, repos, queue, sessions };
    const app = createApp(apiDeps, { feed });
    server = http.createServer(app);
    server.on('upgrade', sessionUpgradeHandler(apiDeps, feed.upgradeHandler(app)));
    server.on('clientError', clientErrorHandler);
    server.keepAliveTimeout = 65_000;
    await new Promise<void>((resolve, reject) => {
      server!.once('error', reject);
      server!.listen(config.PORT, config.HOST, () => resolve());
    });
    port = (server.address() as AddressInfo).port;
    listenPort = port;
    logger.info({ port, engine: engine.name, embedded_db: database.embedded }, 'svc-server listening');
  }

  // Session workers start once the API URL sandboxes need is known.
  if (opts.roles.worker) sessionWorkers = await startSessionWorkers(sessions, queue);

  let stopping: Promise<void> | undefined;
  return {
    url: `http://127.0.0.1:${port}`,
    port,
    database,
    queue,
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
        await queue.stop();
        await provider?.close?.();
        if (!opts.database) await database.close();
        logger.info('svc-server stopped');
      })();
      return stopping;
    },
  };
}
