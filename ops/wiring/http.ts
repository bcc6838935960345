import http from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { createApp } from '../../api/app.js';
import { clientErrorHandler } from '../../api/errors.js';
import { createMetrics } from '../../api/metrics.js';
import { healthRoutes } from '../../api/routes/health.js';
import { createEventsFeed } from '../../api/routes/events-feed.js';
import { sessionUpgradeHandler } from '../../api/routes/session-proxy.js';
import { previewUpgradeHandler } from '../../api/preview-host.js';
import type { SessionDeps } from '../../services/sessions/deps.js';
import { pushSecretsToSandboxes } from '../../services/sessions/secrets-push.js';
import type { SpawnSession } from '../../services/triggers/service.js';
import type { Core } from './core.js';
import type { GatewayHub } from './gateway.js';

export interface HttpWiring {
  port: number;
  /** The listening server (tests watch its responses). */
  server: http.Server;
  /** Stops accepting, closes the events feed's sockets, and waits for open requests (5 s at most). */
  stop(): Promise<void>;
}

/**
 * The HTTP server on PORT: the API (and dashboard, events feed, session proxy upgrades) in
 * the api role; a worker-only process still answers /healthz, /readyz and /metrics there,
 * for container health checks and Kubernetes probes.
 */
export async function listenHttp(core: Core, opts: { sessions: SessionDeps; spawnSession: SpawnSession; gateway?: GatewayHub }): Promise<HttpWiring> {
  const { config, logger, db, secrets, repos, queue, roles, crCommands } = core;
  let server: http.Server;
  let feed: ReturnType<typeof createEventsFeed> | undefined;
  const { sessions, spawnSession } = opts;
  const apiDeps = { config, db, logger, metrics: createMetrics(), secrets, repos, crCommands, queue, sessions, spawnSession,
    // Running sandboxes get secret changes through their daemon's POST /svc/env.
    onSecretsChanged: (projectId: string, change: { set: string[]; unset: string[]; revision: number }) =>
      void pushSecretsToSandboxes(sessions, projectId, change).catch((err: Error) => logger.warn({ err: err.message }, 'secrets push failed')) };
  if (roles.api) {
    feed = createEventsFeed({ db, logger });
    const app = createApp(apiDeps, { feed });
    server = http.createServer(app);
    // Sandboxes reach the same API through their gateway sockets, with their identity attached.
    opts.gateway?.serve(app);
    // Preview hosts first (their own origin), then the session proxy, then the events feed.
    server.on('upgrade', previewUpgradeHandler(apiDeps, sessionUpgradeHandler(apiDeps, feed.upgradeHandler(app))));
  } else {
    const health = express();
    health.disable('x-powered-by');
    health.use(healthRoutes({ config, db, logger, metrics: createMetrics(), secrets, repos, crCommands, queue }));
    server = http.createServer(health);
    // A worker-only process starts sandboxes and holds their gateway sockets: they reach
    // the API there, in-process (clone credentials, smart HTTP, the model gateway), while
    // its port serves health only. Without it every sandbox of an api/worker split (the
    // compose stack, the Helm chart) got 503 "no API role" and cloned nothing.
    opts.gateway?.serve(createApp(apiDeps));
  }
  const listening = server;
  listening.on('clientError', clientErrorHandler);
  listening.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve, reject) => {
    listening.once('error', reject);
    listening.listen(config.PORT, config.HOST, () => {
      listening.off('error', reject);
      resolve();
    });
  });
  // A failed accept (EMFILE when the file table is full) drops that one connection; the
  // listener keeps listening. Without this listener it would end the process.
  listening.on('error', (err) => core.logger.warn({ err: err.message }, 'the HTTP listener could not accept a connection'));
  return {
    port: (listening.address() as AddressInfo).port,
    server: listening,
    async stop() {
      const closed = new Promise<void>((r) => listening.close(() => r()));
      listening.closeIdleConnections();
      setTimeout(() => listening.closeAllConnections(), 5000).unref();
      await feed?.close();
      await closed;
    },
  };
}
