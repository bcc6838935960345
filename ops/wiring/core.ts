import type { Config } from '../../infra/config.js';
import type { Db } from '../../infra/db/db.js';
import type { Logger } from '../../lib/logger.js';
import type { Queue } from '../../infra/queue.js';
import type { SecretBox } from '../../infra/secret-box.js';
import type { ProjectRepos } from '../../infra/git/project-repos.js';
import type { CrCommandPath } from '../../services/change-requests/command-path.js';
import type { WorkerMetrics } from '../../workers/supervisor.js';

/** What every feature's wiring is handed: the process's database, queue, repositories and roles. */
export interface Core {
  config: Config;
  logger: Logger;
  roles: { api: boolean; worker: boolean };
  db: Db;
  secrets: SecretBox;
  repos: ProjectRepos;
  queue: Queue;
  /** The CR command path's group commit and caches, one per process (on `db`'s pool). */
  crCommands: CrCommandPath;
  /** The periodic jobs' metrics (workers/supervisor.ts), served on /metrics with the API's. */
  workerMetrics?: WorkerMetrics;
}

/**
 * What a feature leaves running. At shutdown every `stop` runs (it ends the feature's
 * intake; in start order) before the queue stops, then every `close` (it releases what
 * the feature holds; in reverse order: apps stop before the providers they run on close).
 */
export interface Running {
  stop?(): Promise<void> | void;
  close?(): Promise<void>;
}
