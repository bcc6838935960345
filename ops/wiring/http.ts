import http from 'node:http';
import type { AddressInfo } from 'node:net';
import express from 'express';
import { createApp } from '../../api/app.js';
import { clientErrorHandler } from '../../api/errors.js';
import { createMetrics, metricsListenerHandler, type Metrics } from '../../api/metrics.js';
import type { Logger } from '../../lib/logger.js';
import { healthRoutes } from '../../api/routes/health.js';
import { createEventsFeed } from '../../api/routes/events-feed.js';
import { sessionUpgradeHandler } from '../../api/routes/session-proxy.js';
import { previewUpgradeHandler } from '../../api/preview-host.js';
import { appUpgradeHandler } from '../../api/app-host.js';
import type { SessionDeps } from '../../services/sessions/deps.js';
import { pushSecretsToSandboxes } from '../../services/sessions/secrets-push.js';
import type { SpawnSession } from '../../services/triggers/service.js';
import type { Core } from './core.js';
import type { GatewayHub } from './gateway.js';
import { portProblemMessage } from '../../lib/net.js';
import { apiServices } from '../../services/api-services/index.js';
import { authGuardOf } from '../../api/auth.js';
import { settingsOf } from '../../api/deps.js';

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
  const metrics = createMetrics(core.workerMetrics ? [core.workerMetrics.registry] : []);
  // Running sandboxes get secret changes through their daemon's POST /svc/env.
  const onSecretsChanged = (projectId: string, change: { set: string[]; unset: string[]; revision: number }) =>
    void pushSecretsToSandboxes(sessions, projectId, change).catch((err: Error) => logger.warn({ err: err.message }, 'secrets push failed'));
  // The API's services, built once: routes call them and never see the database.
  const services = apiServices({ config, db, logger, secrets, repos, crCommands, queue, sessions, spawnSession, onSecretsChanged });
  const apiDeps = { services, guard: authGuardOf(config), settings: settingsOf(config), logger, metrics };
  if (roles.api) {
    feed = createEventsFeed({ reads: services.feed, logger });
    const app = createApp(apiDeps, { feed });
    server = http.createServer(app);
    // Sandboxes reach the same API through their gateway sockets, with their identity attached.
    opts.gateway?.serve(app);
    // App and preview hosts first (their own origins), then the session proxy, then the events feed.
    server.on('upgrade', appUpgradeHandler(apiDeps, previewUpgradeHandler(apiDeps, sessionUpgradeHandler(apiDeps, feed.upgradeHandler(app)))));
  } else {
    const health = express();
    health.disable('x-powered-by');
    health.use(healthRoutes(apiDeps));
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
    // Taken between the start's check and here: the same words as that check.
    const failed = (err: NodeJS.ErrnoException) => reject(err.code === 'EADDRINUSE' || err.code === 'EACCES' ? new Error(portProblemMessage(config.PORT, config.HOST, err)) : err);
    listening.once('error', failed);
    listening.listen(config.PORT, config.HOST, () => {
      listening.off('error', failed);
      resolve();
    });
  });
  // A failed accept (EMFILE when the file table is full) drops that one connection; the
  // listener keeps listening. Without this listener it would end the process.
  listening.on('error', (err) => core.logger.warn({ err: err.message }, 'the HTTP listener could not accept a connection'));
  const metricsServer = await listenMetrics(config.SVC_METRICS_ADDR, metrics, logger);
  return {
    port: (listening.address() as AddressInfo).port,
    server: listening,
    async stop() {
      if (metricsServer) {
        metricsServer.close();
        metricsServer.closeAllConnections();
      }
      const closed = new Promise<void>((r) => listening.close(() => r()));
      listening.closeIdleConnections();
      setTimeout(() => listening.closeAllConnections(), 5000).unref();
      await feed?.close();
      await closed;
    },
  };
}

/**
 * The metrics' own listener (`SVC_METRICS_ADDR`, loopback by default): no credential, so
 * it is bound where only the operator's scraper reaches. A listener that cannot be opened
 * (the address taken, e.g. two servers on one host) is logged and the server runs on
 * without it: metrics are not worth an outage.
 */
async function listenMetrics(addr: string, metrics: Metrics, logger: Logger): Promise<http.Server | null> {
  if (addr === 'off') return null;
  const at = addr.lastIndexOf(':');
  const host = addr.slice(0, at).replace(/^\[(.*)\]$/, '$1');
  const port = Number(addr.slice(at + 1));
  const server = http.createServer(metricsListenerHandler(metrics));
  server.on('clientError', (_e, socket) => socket.destroy());
  server.requestTimeout = 10_000;
  server.headersTimeout = 5_000;
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => {
        server.off('error', reject);
        resolve();
      });
    });
  } catch (err) {
    logger.error({ err: (err as Error).message, addr }, 'metrics listener not opened (SVC_METRICS_ADDR)');
    return null;
  }
  server.on('error', (err) => logger.warn({ err: err.message }, 'metrics listener error'));
  const a = server.address() as AddressInfo;
  logger.info({ metrics_addr: `${a.address}:${a.port}` }, 'metrics listening');
  return server;
}
