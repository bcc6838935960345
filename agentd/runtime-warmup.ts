import { randomBytes } from 'node:crypto';
import path from 'node:path';
import type { Logger } from '../lib/logger.js';
import { git } from './git.js';
import type { RuntimeClient } from './runtime-client.js';

/**
 * What the daemon does so the agent answers the first prompt at once (docs/agentd.md
 * "Warm-up"), for opencode only. (Its project id, which keys the conversations a pause
 * saves, does not move at the claim: opencode derives it from the `origin` remote, which
 * a pool sandbox's empty repository has from its boot, as a cold clone does.)
 *
 * - **The warm-up**: once the runtime is up, the daemon loads the workspace's instance
 *   (`GET /config/providers`) and runs one throwaway turn whose text is a nonce the model
 *   relay refuses locally (model-relay.ts: 400, nothing sent upstream), then deletes that
 *   session. The first turn of an instance pays for its tools, plugins, skills and
 *   snapshot (~0.5-0.7 s here); afterwards the agent's first turn is a model call away.
 *   A pool sandbox warms up before it counts as ready; a cold one in the background.
 * - **After a claim**: a repository with runtime config of its own (tracked `opencode.json`,
 *   `.opencode/`, the agent config dir, skills under `.claude/` or `.agents/`) was not there
 *   when the instance loaded: it is disposed, and warmed again.
 */
export const warmupNonce = (): string => `svc-warmup-${randomBytes(16).toString('hex')}`;

export interface WarmupOptions {
  client: RuntimeClient;
  nonce: string;
  /** `svc/<model>`: a model behind the relay; without one only the instance is loaded. */
  model: string | undefined;
  logger: Logger;
  timeoutMs?: number;
}

/** Never throws: a warm-up that fails leaves the runtime as it was (cold). */
export async function warmRuntime(o: WarmupOptions): Promise<boolean> {
  const t0 = Date.now();
  const timeout = o.timeoutMs ?? 60_000;
  try {
    await o.client.providers(timeout);
    if (o.model) {
      const id = await o.client.createSession('svc warm-up');
      try {
        await o.client.prompt(id, o.nonce, { model: o.model }, timeout);
      } finally {
        await o.client.deleteSession(id).catch((err: Error) => o.logger.warn({ err: err.message }, 'warm-up session not deleted'));
      }
    }
    o.logger.info({ ms: Date.now() - t0, turn: Boolean(o.model) }, 'runtime warmed up');
    return true;
  } catch (err) {
    o.logger.warn({ err: (err as Error).message, ms: Date.now() - t0 }, 'runtime warm-up failed; the first turn loads it');
    return false;
  }
}

const RUNTIME_CONFIG_ENTRIES = new Set(['opencode.json', 'opencode.jsonc', '.opencode', '.claude', '.agents']);

/** Whether the checked-out commit carries runtime config the instance must load (tracked files only). */
export async function tracksRuntimeConfig(workspace: string, configDir: string): Promise<boolean> {
  const out = await git(['ls-tree', '--name-only', '-z', 'HEAD'], { cwd: workspace }).catch(() => null);
  if (!out) return false;
  const own = path.relative(workspace, configDir).split(path.sep)[0];
  return out
    .split('\0')
    .filter(Boolean)
    .some((name) => RUNTIME_CONFIG_ENTRIES.has(name) || name === own);
}
