import type { Config } from '../../infra/config.js';
import type { Db } from '../../infra/db/db.js';
import type { Logger } from '../../lib/logger.js';
import type { Queue } from '../../infra/queue.js';
import type { SecretBox } from '../../infra/secret-box.js';
import type { ProjectRepos } from '../../infra/git/project-repos.js';
import type { SandboxProvider } from '../../infra/sandbox/port.js';
import type { ProjectSecrets } from './sandbox-env.js';

/** What the session service, its workers and its routes need; passed in. */
export interface SessionDeps {
  config: Config;
  db: Db;
  logger: Logger;
  secrets: SecretBox;
  repos: ProjectRepos;
  /** Provisioning and stopping are jobs on it (in tests without a server: test/support/memory-queue.ts). */
  queue: Queue;
  /** Absent in an API-only process: provisioning and stopping happen in the workers. */
  provider?: SandboxProvider;
  /**
   * Every provider this host can run (infra/sandbox/registry.ts `SandboxProviders`): a
   * sandbox is stopped by the provider its row names, and the orphan sweep lists each.
   * Absent: only `provider`.
   */
  providers?: { get(name: string): SandboxProvider | undefined; loadable(): SandboxProvider[] };
  /** The API base (ending in /v1) as a sandbox reaches it; known once the server listens. */
  apiUrl: () => string;
  /**
   * Where a person opens the dashboard (SVC_PUBLIC_URL, else this server's listener), for
   * links the agent shows: never the sandbox's gateway, which only the sandbox reaches.
   */
  dashboardUrl?: () => string;
  /** The project's secrets for a sandbox's environment (the secrets feature); absent: none. */
  projectSecrets?: (projectId: string) => Promise<ProjectSecrets>;
  now?: () => Date;
  /**
   * When each session last recorded activity in this process (a cache; the event is the
   * truth): made once by the wiring, so activity is written at most once per interval.
   */
  activity: Map<string, number>;
  /**
   * Aborted when this process stops: waits on a sandbox or its agent runtime end at once,
   * leaving the session as it is (provisioning, or running with the agent `starting`) for
   * a restarted server, or another worker's sweep, to resume. Absent: never aborted.
   */
  stopping?: AbortSignal;
}

/** Ends a wait because this process stops (`SessionDeps.stopping`); not a failure of the session. */
export class StopInterrupted extends Error {
  readonly code = 'interrupted';
  constructor() {
    super('this process is stopping');
  }
}

/** Sleeps `ms`, or less when `signal` aborts. */
export function pause(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener('abort', done, { once: true });
  });
}

/** A probe's signal: its own timeout, or this process stopping. */
export const probeSignal = (ms: number, stopping?: AbortSignal): AbortSignal =>
  stopping ? AbortSignal.any([AbortSignal.timeout(ms), stopping]) : AbortSignal.timeout(ms);

export const idleMs = (config: Config): number => config.SVC_SESSION_IDLE_MINUTES * 60_000;

/** The least idle time a project can set (`[sandbox] idle_timeout_minutes` ≥ 4). */
export const MIN_PROJECT_IDLE_MS = 4 * 60_000;

/**
 * Activity is recorded at most this often per session (an event each time): a quarter of
 * the shortest idle time any session may have (the server's, or a project's 4 minutes), so
 * a session in use is never older than its timeout by the sweep's clock; at most a minute.
 */
export const activityIntervalMs = (config: Config): number => Math.min(MIN_PROJECT_IDLE_MS, idleMs(config)) / 4;
