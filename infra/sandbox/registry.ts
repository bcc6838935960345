import { spawnSync } from 'node:child_process';
import type { Config } from '../config.js';
import type { Logger } from '../logger.js';
import { SandboxError, type SandboxProvider, type SandboxProviderName } from './port.js';
import { createProcessProvider } from './process.js';
import { providerFactories } from './factories.js';

/**
 * `SVC_SANDBOX_PROVIDER` → a provider: `process` here, bwrap, docker and kubernetes from
 * ./factories.ts (docs/sandbox-providers.md).
 */
export interface SandboxRegistryDeps {
  logger: Logger;
  /** Extra env for every sandbox (tests). */
  extraEnv?: Record<string, string>;
}

export type ProviderFactory = (config: Config, deps: SandboxRegistryDeps) => SandboxProvider;

export const factories: Partial<Record<SandboxProviderName, ProviderFactory>> = {
  process: (config, deps) =>
    createProcessProvider({
      dataDir: config.dataDir,
      logger: deps.logger,
      ...(config.SVC_AGENT_RUNTIME ? { runtime: config.SVC_AGENT_RUNTIME } : {}),
      ...(deps.extraEnv ? { extraEnv: deps.extraEnv } : {}),
    }),
  ...providerFactories,
};

/** Unset SVC_SANDBOX_PROVIDER: bwrap when it is registered and installed, else process. */
export function defaultProviderName(): SandboxProviderName {
  if (factories.bwrap && spawnSync('bwrap', ['--version'], { stdio: 'ignore' }).status === 0) return 'bwrap';
  return 'process';
}

export function createSandboxProvider(config: Config, deps: SandboxRegistryDeps): SandboxProvider {
  const name: SandboxProviderName = config.SVC_SANDBOX_PROVIDER ?? defaultProviderName();
  const factory = factories[name];
  if (!factory) throw new SandboxError('unavailable', `sandbox provider '${name}' is not available in this build`);
  return factory(config, deps);
}
