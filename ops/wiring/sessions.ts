import type { SandboxProvider } from '../../infra/sandbox/port.js';
import { createSandboxProvider, createSandboxProviders, runtimeInstallHint, sandboxesRoot } from '../../infra/sandbox/registry.js';
import { createGatewayHub, type GatewayHub } from './gateway.js';
import { wireEgress } from './egress.js';
import { gatewayLimitsFor } from './gateway-limits.js';
import type { SessionDeps } from '../../services/sessions/deps.js';
import { sandboxSecrets } from '../../services/secrets/sandbox-env.js';
import { startSessionWorkers } from '../../workers/sessions.js';
import type { Core, Running } from './core.js';

export interface SessionsWiring extends Running {
  deps: SessionDeps;
  /** Where apps run: the sessions' provider, or bwrap/process when sessions use containers. */
  appProvider: SandboxProvider | undefined;
  /** The server's end of the sandboxes' gateway sockets (served by the API once it exists). */
  gateway: GatewayHub;
  /** Starts the session workers (worker role), once the API URL sandboxes use is known. */
  startWorkers(): Promise<void>;
}

/**
 * Sessions: the sandbox provider (worker role), the service's deps and, later,
 * the workers. `listenPort` is the port the HTTP server got (PORT=0 in tests).
 */
export function wireSessions(
  core: Core,
  opts: { sandboxEnv?: Record<string, string>; projectSecrets?: SessionDeps['projectSecrets']; listenPort: () => number },
): SessionsWiring {
  const { config, logger, db, secrets, repos, queue, roles } = core;
  const apiUrl = () =>
    config.SVC_SANDBOX_API_URL?.replace(/\/+$/, '') ??
    (config.SVC_PUBLIC_URL ? `${config.SVC_PUBLIC_URL.replace(/\/+$/, '')}/v1` : `http://127.0.0.1:${opts.listenPort()}/v1`);
  // The sandboxes' egress proxy, reached through each gateway's egress socket.
  // Every sandbox's share of the server: connections, requests, rate, descriptors.
  const limits = gatewayLimitsFor(config, logger);
  const egress = wireEgress(core, { admitFd: () => limits.connection() });
  const gateway = createGatewayHub({ logger, serverOrigin: apiUrl, egress: (socket, id) => egress.proxy.handle(socket, id), limits });
  const extra = { ...(opts.sandboxEnv ? { extraEnv: opts.sandboxEnv } : {}), gateway };
  // The current provider, and the others this host can run (stopping an earlier provider's sandboxes, the orphan sweep).
  const providers = roles.worker ? createSandboxProviders(config, { logger, ...extra }) : undefined;
  const provider = providers?.current;
  const modelGateway = config.SVC_LLM_UPSTREAM_URL ? `gateway to ${new URL(config.SVC_LLM_UPSTREAM_URL).host}` : 'no model gateway (SVC_LLM_UPSTREAM_URL unset)';
  if (provider) logger.info({ provider: provider.name, models: modelGateway }, `sandbox provider: ${provider.name}; models: ${modelGateway}`);
  const runtimeHint = provider && runtimeInstallHint(config, provider.name);
  if (runtimeHint) logger.warn(runtimeHint);
  // Apps run a command from an exported tree on this host (process, bwrap). When sessions
  // run on docker or kubernetes, apps use bwrap where installed, else process.
  const appProvider =
    provider && (provider.name === 'docker' || provider.name === 'kubernetes')
      ? createSandboxProvider({ ...config, SVC_SANDBOX_PROVIDER: undefined }, { logger, ...extra })
      : provider;
  // A stop must not wait out a provisioning deadline (minutes): the jobs' waits end on it.
  const stopping = new AbortController();
  // The dashboard as a person opens it: the public URL, else the first listed origin, else this listener.
  const publicOrigin = config.SVC_PUBLIC_URL ?? config.SVC_PUBLIC_HOSTS.split(',').map((s) => s.trim()).find(Boolean);
  const dashboardUrl = () => {
    if (publicOrigin) return publicOrigin.replace(/\/+$/, '');
    const host = ['0.0.0.0', '::', '127.0.0.1', '::1', 'localhost'].includes(config.HOST) ? 'localhost' : config.HOST.includes(':') ? `[${config.HOST}]` : config.HOST;
    return `http://${host}:${opts.listenPort()}`;
  };
  const deps: SessionDeps = {
    config, db, logger, secrets, repos, queue, apiUrl, dashboardUrl, activity: new Map(), stopping: stopping.signal,
    ...(provider ? { provider } : {}),
    ...(providers ? { providers } : {}),
    projectSecrets: opts.projectSecrets ?? ((projectId) => sandboxSecrets(db, secrets, projectId)),
  };
  let workers: { stop(): Promise<void> } | undefined;
  return {
    deps,
    appProvider,
    gateway,
    async startWorkers() {
      // Sandboxes left running by an earlier process reach the server again.
      if (roles.worker) await gateway.reopen(sandboxesRoot(config));
      if (roles.worker) workers = await startSessionWorkers(deps, queue, { metrics: core.workerMetrics });
    },
    stop: async () => {
      stopping.abort();
      await workers?.stop();
    },
    async close() {
      await gateway.closeAll();
      await egress.close?.();
      await providers?.close();
      if (appProvider !== provider) await appProvider?.close?.();
    },
  };
}
