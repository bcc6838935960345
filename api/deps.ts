import type { Config } from '../infra/config.js';
import type { Db } from '../infra/db/db.js';
import type { Logger } from '../lib/logger.js';
import type { Queue } from '../infra/queue.js';
import type { SecretBox } from '../infra/secret-box.js';
import type { ProjectRepos } from '../infra/git/project-repos.js';
import type { CrCommandPath } from '../services/change-requests/command-path.js';
import type { Metrics } from './metrics.js';
import type { SessionDeps } from '../services/sessions/deps.js';
import type { SpawnSession } from '../services/triggers/service.js';
import type { ApiServices } from '../services/api-services/index.js';
import type { AuthGuard } from './auth.js';

/** Everything a route module may use, passed in (no module-level singletons). */
export interface ApiDeps {
  /** Every workflow the routes call, built once by the wiring (services/api-services/). */
  services: ApiServices;
  /** The failed-authentication limit every credential check shares (one per server). */
  guard: AuthGuard;
  config: Config;
  db: Db;
  logger: Logger;
  metrics: Metrics;
  secrets: SecretBox;
  repos: ProjectRepos;
  /** The CR command path's group commit and caches (one per process). */
  crCommands: CrCommandPath;
  /** Merges, provisioning, manifest syncs and app deploys are jobs on it. */
  queue: Queue;
  /** Sessions: absent in a process that runs none (the routes answer 503). */
  sessions?: SessionDeps;
  // --- manifest, secrets, triggers, apps ---
  /** Spawns a session (the sessions capability); absent: a trigger fire records 'sessions unavailable'. */
  spawnSession?: SpawnSession;
  /** Told after a project's secrets change (push to running sandboxes: POST /svc/env). */
  onSecretsChanged?: (projectId: string, change: { set: string[]; unset: string[]; revision: number }) => void;
}
