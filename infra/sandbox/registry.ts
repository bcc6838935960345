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
import { type SandboxProvider, type SandboxProviderName } from './port.js';
import { createProcessProvider } from './process.js';
import { which } from './provider-util.js';

export interface SandboxRegistryDeps {
  logger: Logger;
  /** Variables added to every sandbox's environment (tests). */
  extraEnv?: Record<string, string>;
}

export type ProviderFactory = (config: Config, deps: SandboxRegistryDeps) => SandboxProvider;

/** Where process and bwrap sandboxes live: `<data dir>/sandboxes/<id>/`. */
export const sandboxesRoot = (config: Pick<Config, 'dataDir'>) => path.join(config.dataDir, 'sandboxes');

const extraEnvOf = (deps: SandboxRegistryDeps) => (deps.extraEnv ? { extraEnv: deps.extraEnv } : {});
const runtimeOf = (config: Config) => (config.SVC_AGENT_RUNTIME ? { runtime: config.SVC_AGENT_RUNTIME } : {});

export const providerFactories: Record<SandboxProviderName, ProviderFactory> = {
  process: (config, deps) =>
    createProcessProvider({ dataDir: config.dataDir, logger: deps.logger, ...runtimeOf(config), ...extraEnvOf(deps) }),
  bwrap: (config, deps) => createBwrapProvider({ root: sandboxesRoot(config), ...runtimeOf(config), ...extraEnvOf(deps) }),
  docker: (config, deps) => createDockerProvider({ image: config.SVC_SANDBOX_IMAGE, network: config.SVC_DOCKER_NETWORK, ...extraEnvOf(deps) }),
  kubernetes: (config, deps) =>
    createKubernetesProvider({
      ...extraEnvOf(deps),
      namespace: config.SVC_K8S_NAMESPACE,
      image: config.SVC_SANDBOX_IMAGE,
      clusterDomain: config.SVC_K8S_CLUSTER_DOMAIN,
      imagePullPolicy: config.SVC_K8S_IMAGE_PULL_POLICY,
    }),
};

/** Unset SVC_SANDBOX_PROVIDER: `bwrap` when the binary is installed, else `process` (the spec's default). */
export function defaultProviderName(): SandboxProviderName {
  return which('bwrap') ? 'bwrap' : 'process';
}

export function createSandboxProvider(config: Config, deps: SandboxRegistryDeps): SandboxProvider {
  const name: SandboxProviderName = config.SVC_SANDBOX_PROVIDER ?? defaultProviderName();
  return providerFactories[name](config, deps);
}
