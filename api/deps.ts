import type { Config } from '../infra/config.js';
import type { Db } from '../infra/db/db.js';
import type { Logger } from '../infra/logger.js';
import type { Queue } from '../infra/queue.js';
import type { SecretBox } from '../infra/secrets.js';
import type { ProjectRepos } from '../infra/change-requests/repos.js';
import type { Metrics } from './metrics.js';
import type { SessionDeps } from '../infra/sessions/deps.js';

/** Everything a route module may use, passed in (no module-level singletons). */
export interface ApiDeps {
  config: Config;
  db: Db;
  logger: Logger;
  metrics: Metrics;
  secrets: SecretBox;
  repos: ProjectRepos;
  /** Absent in a process that runs no queue (then merges run inline). */
  queue?: Queue;
  /** Sessions (issue 10): absent in a process that runs none (the routes answer 503). */
  sessions?: SessionDeps;
}
