/**
 * `SVC_SANDBOX_PROVIDER` → a provider: the one table of provider factories, each building
 * its provider from the server's configuration (docs/sandbox-providers.md), and the one
 * default when the variable is unset.
 */
import path from 'node:path';
import type { Config } from '../config.js';
import type { Logger } from '../../lib/logger.js';
import { createBwrapProvider } from './bwrap.js';
import { createDockerProvider } from './docker.js';
import { createKubernetesProvider } from './kubernetes.js';
import { type SandboxGatewayHost, type SandboxProvider, type SandboxProviderName } from './port.js';
import { createProcessProvider } from './process.js';
import { which } from './provider-util.js';
import { UNISOLATED_PROVIDERS } from '../../domain/sandbox.js';

export interface SandboxRegistryDeps {
  logger: Logger;
  /** Variables added to every sandbox's environment (tests). */
  extraEnv?: Record<string, string>;
  /** The server's end of every sandbox's gateway socket. */
  gateway?: SandboxGatewayHost;
}

export type ProviderFactory = (config: Config, deps: SandboxRegistryDeps) => SandboxProvider;

/** Where process and bwrap sandboxes live: `<data dir>/sandboxes/<id>/`. */
export const sandboxesRoot = (config: Pick<Config, 'dataDir'>) => path.join(config.dataDir, 'sandboxes');

const extraEnvOf = (deps: SandboxRegistryDeps) => ({ ...(deps.extraEnv ? { extraEnv: deps.extraEnv } : {}), ...(deps.gateway ? { gateway: deps.gateway } : {}) });
const runtimeOf = (config: Config) => (config.SVC_AGENT_RUNTIME ? { runtime: config.SVC_AGENT_RUNTIME } : {});

export const providerFactories: Record<SandboxProviderName, ProviderFactory> = {
  process: (config, deps) =>
    createProcessProvider({ dataDir: config.dataDir, logger: deps.logger, ...runtimeOf(config), ...extraEnvOf(deps) }),
  bwrap: (config, deps) => createBwrapProvider({ root: sandboxesRoot(config), ...runtimeOf(config), ...extraEnvOf(deps) }),
  docker: (config, deps) => {
    // SVC_AGENT_RUNTIME, when set, names the runtime as the container sees it (a path in the image).
    const runtime: Record<string, string> = config.SVC_AGENT_RUNTIME ? { SVC_AGENT_RUNTIME: config.SVC_AGENT_RUNTIME } : {};
    return createDockerProvider({ image: config.SVC_SANDBOX_IMAGE, root: sandboxesRoot(config), ...extraEnvOf(deps), extraEnv: { ...runtime, ...deps.extraEnv } });
  },
  kubernetes: (config, deps) =>
    createKubernetesProvider({
      ...(deps.extraEnv ? { extraEnv: deps.extraEnv } : {}),
      namespace: config.SVC_K8S_NAMESPACE,
      image: config.SVC_SANDBOX_IMAGE,
      clusterDomain: config.SVC_K8S_CLUSTER_DOMAIN,
      imagePullPolicy: config.SVC_K8S_IMAGE_PULL_POLICY,
    }),
};

/**
 * Unset SVC_SANDBOX_PROVIDER: `bwrap`. Never `process` by default: it isolates nothing, so
 * it runs only when chosen; without bwrap, sessions fail with what to install or choose.
 */
export function defaultProviderName(): SandboxProviderName {
  return 'bwrap';
}


export function createSandboxProvider(config: Config, deps: SandboxRegistryDeps): SandboxProvider {
  const name: SandboxProviderName = config.SVC_SANDBOX_PROVIDER ?? defaultProviderName();
  const provider = providerFactories[name](config, deps);
  const unisolated = UNISOLATED_PROVIDERS.includes(name);
  const log = { provider: name, chosen: config.SVC_SANDBOX_PROVIDER ? 'SVC_SANDBOX_PROVIDER' : 'default', isolated: !unisolated };
  if (unisolated) deps.logger.warn(log, 'sandbox provider: process runs sandboxes UNISOLATED (the host network and filesystem); single-user use only');
  else deps.logger.info(log, 'sandbox provider');
  if (name === 'bwrap' && !which('bwrap')) deps.logger.warn({ provider: name }, 'bwrap is not installed: sessions will fail until it is (apt-get install bubblewrap), or choose SVC_SANDBOX_PROVIDER');
  return provider;
}
