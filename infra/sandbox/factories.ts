/**
 * The bwrap, docker and kubernetes providers built from the server's configuration, in
 * the shape the registry (infra/sandbox/registry.ts) keeps its factories:
 * `(config, deps) => SandboxProvider`. The registry spreads `providerFactories` into its
 * own table and may default to `defaultSandboxProviderName()`.
 */
import path from 'node:path';
import type { Config } from '../config.js';
import { createBwrapProvider } from './bwrap.js';
import { createDockerProvider } from './docker.js';
import { createKubernetesProvider } from './kubernetes.js';
import type { SandboxProvider, SandboxProviderName, SandboxSpec } from './port.js';
import { which } from './provider-util.js';

export interface ProviderFactoryDeps {
  /** Variables added to every sandbox's environment (tests). */
  extraEnv?: Record<string, string>;
  /** docker: the repo's `.svc/Dockerfile` for a sandbox, when it has one. */
  dockerfileFor?: (spec: SandboxSpec) => Promise<string | undefined>;
}

/** `bwrap` when the binary is installed, else `process` (the spec's default). */
export function defaultSandboxProviderName(): SandboxProviderName {
  return which('bwrap') ? 'bwrap' : 'process';
}

/** Where bwrap sandboxes live: the same `<data dir>/sandboxes/<id>/` layout as the process provider. */
export const bwrapRoot = (config: Pick<Config, 'dataDir'>) => path.join(config.dataDir, 'sandboxes');

export const providerFactories: Record<'bwrap' | 'docker' | 'kubernetes', (config: Config, deps: ProviderFactoryDeps) => SandboxProvider> = {
  bwrap: (config, deps) =>
    createBwrapProvider({
      root: bwrapRoot(config),
      ...(config.SVC_AGENT_RUNTIME ? { runtime: config.SVC_AGENT_RUNTIME } : {}),
      ...(deps.extraEnv ? { extraEnv: deps.extraEnv } : {}),
    }),
  docker: (config, deps) =>
    createDockerProvider({
      image: config.SVC_SANDBOX_IMAGE,
      network: config.SVC_DOCKER_NETWORK,
      ...(deps.extraEnv ? { extraEnv: deps.extraEnv } : {}),
      ...(deps.dockerfileFor ? { dockerfileFor: deps.dockerfileFor } : {}),
    }),
  kubernetes: (config, deps) =>
    createKubernetesProvider({
      ...(deps.extraEnv ? { extraEnv: deps.extraEnv } : {}),
      namespace: config.SVC_K8S_NAMESPACE,
      image: config.SVC_SANDBOX_IMAGE,
      clusterDomain: config.SVC_K8S_CLUSTER_DOMAIN,
      imagePullPolicy: config.SVC_K8S_IMAGE_PULL_POLICY,
    }),
};
