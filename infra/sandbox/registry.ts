/**
 * `SVC_SANDBOX_PROVIDER` → a provider: the one table of provider factories, each building
 * its provider from the server's configuration (docs/sandbox-providers.md), and the one
 * default when the variable is unset.
 */
import { existsSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import type { Config } from '../config.js';
import type { Logger } from '../../lib/logger.js';
import { createBwrapProvider } from './bwrap.js';
import { createDockerProvider } from './docker.js';
import { createKubernetesProvider } from './kubernetes.js';
import { type SandboxGatewayHost, type SandboxProvider, type SandboxProviderName } from './port.js';
import { createProcessProvider } from './process.js';
import { sandboxCapsOf } from './limits.js';
import { appRoot, which } from './provider-util.js';
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
const capsOf = (config: Config) => ({ caps: sandboxCapsOf(config) });
const runtimeOf = (config: Config) => (config.SVC_AGENT_RUNTIME ? { runtime: config.SVC_AGENT_RUNTIME } : {});

export const providerFactories: Record<SandboxProviderName, ProviderFactory> = {
  process: (config, deps) =>
    createProcessProvider({ dataDir: config.dataDir, logger: deps.logger, ...runtimeOf(config), ...extraEnvOf(deps), ...capsOf(config) }),
  bwrap: (config, deps) => createBwrapProvider({ root: sandboxesRoot(config), ...runtimeOf(config), ...extraEnvOf(deps), ...capsOf(config) }),
  docker: (config, deps) => {
    // SVC_AGENT_RUNTIME, when set, names the runtime as the container sees it (a path in the image).
    const runtime: Record<string, string> = config.SVC_AGENT_RUNTIME ? { SVC_AGENT_RUNTIME: config.SVC_AGENT_RUNTIME } : {};
    return createDockerProvider({ image: config.SVC_SANDBOX_IMAGE, root: sandboxesRoot(config), ...extraEnvOf(deps), extraEnv: { ...runtime, ...deps.extraEnv }, ...capsOf(config) });
  },
  kubernetes: (config, deps) =>
    createKubernetesProvider({
      ...(deps.extraEnv ? { extraEnv: deps.extraEnv } : {}),
      namespace: config.SVC_K8S_NAMESPACE,
      image: config.SVC_SANDBOX_IMAGE,
      clusterDomain: config.SVC_K8S_CLUSTER_DOMAIN,
      imagePullPolicy: config.SVC_K8S_IMAGE_PULL_POLICY,
      ...capsOf(config),
    }),
};

/**
 * The default agent runtime (the `opencode-ai` package) is an optional dependency: an install
 * without it still serves change requests, but process and bwrap sandboxes would start no
 * agent. Says how to get one when neither it nor SVC_AGENT_RUNTIME is there.
 */
export function runtimeInstallHint(config: Pick<Config, 'SVC_AGENT_RUNTIME'>, provider: SandboxProviderName, root = appRoot): string | undefined {
  if (config.SVC_AGENT_RUNTIME || (provider !== 'process' && provider !== 'bwrap')) return undefined;
  if (existsSync(path.join(root, 'node_modules', '.bin', 'opencode'))) return undefined;
  return `no agent runtime: the default, opencode, is not installed (run 'npm install opencode-ai' in ${root}), and SVC_AGENT_RUNTIME is unset; sessions will fail to start their agent`;
}

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

/**
 * Every provider a server may meet on its rows and its host: the current one (new
 * sandboxes start there) and the others this host can reach, built on first use. A
 * sandbox is stopped by the provider that made it (its row names it), never by the
 * current one; the orphan sweep lists every loadable one (an earlier provider's sandboxes
 * are found after a switch).
 */
export interface SandboxProviders {
  current: SandboxProvider;
  /** The provider of that name when this host can run it, else undefined. */
  get(name: string): SandboxProvider | undefined;
  /** Every loadable provider, the current one first. */
  loadable(): SandboxProvider[];
  close(): Promise<void>;
}

/** What a host offers, read once at start (tests pass their own). */
export interface HostProbe {
  env: Record<string, string | undefined>;
  exists: (p: string) => boolean;
  which: (cmd: string) => string | undefined;
}
const hostProbe = (): HostProbe => ({ env: process.env, exists: existsSync, which: (cmd) => which(cmd) });

/**
 * Which providers this host can run: process always; bwrap when installed; docker when an
 * engine is configured (DOCKER_HOST or the default socket); kubernetes when chosen or a
 * cluster is configured (in-cluster, KUBECONFIG, ~/.kube/config). Loadable is not the same
 * as working: a provider that fails to list is skipped by the sweep with a warning.
 */
export function loadableProviderNames(current: SandboxProviderName, probe: HostProbe = hostProbe()): SandboxProviderName[] {
  const ok: Record<SandboxProviderName, boolean> = {
    process: true,
    bwrap: !!probe.which('bwrap'),
    docker: !!probe.env.DOCKER_HOST || probe.exists('/var/run/docker.sock'),
    kubernetes: !!probe.env.KUBERNETES_SERVICE_HOST || !!probe.env.KUBECONFIG || probe.exists(path.join(os.homedir(), '.kube', 'config')),
  };
  ok[current] = true;
  return [current, ...(Object.keys(ok) as SandboxProviderName[]).filter((n) => n !== current && ok[n])];
}

export function createSandboxProviders(config: Config, deps: SandboxRegistryDeps, probe: HostProbe = hostProbe()): SandboxProviders {
  const current = createSandboxProvider(config, deps);
  const names = loadableProviderNames(current.name, probe);
  const built = new Map<SandboxProviderName, SandboxProvider>([[current.name, current]]);
  const get = (name: string): SandboxProvider | undefined => {
    const n = name as SandboxProviderName;
    if (!names.includes(n)) return undefined;
    let p = built.get(n);
    if (!p) {
      p = providerFactories[n](config, deps);
      built.set(n, p);
    }
    return p;
  };
  return {
    current,
    get,
    loadable: () => names.map((n) => get(n)!),
    async close() {
      for (const p of built.values()) await p.close?.();
    },
  };
}
