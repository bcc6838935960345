import path from 'node:path';
import { reposDirOf } from '../../infra/git/managed-repo.js';
import { bareRepositoriesUnder, RepoMaintainer } from '../../infra/git/maintenance.js';
import { startRepositoryMaintenance } from '../../workers/repository-maintenance.js';
import type { Core, Running } from './core.js';

/**
 * Repository maintenance runs with the workers: managed repositories and mirrors are packed
 * when they grew and on a schedule (infra/git/maintenance.ts, workers/repository-maintenance.ts),
 * beside reads and merges, never in a request's path.
 */
export function wireMaintenance(core: Core): Running {
  const { config, logger, roles } = core;
  if (!roles.worker) return {};
  const log = logger.child({ component: 'git-maintenance' });
  const maintainer = new RepoMaintainer({
    repositories: () => bareRepositoriesUnder(reposDirOf(config), path.join(config.dataDir, 'mirrors')),
    logger: log,
  });
  const job = startRepositoryMaintenance(maintainer, { logger: log, metrics: core.workerMetrics });
  return { stop: () => job.stop() };
}
