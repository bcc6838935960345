import path from 'node:path';
import { reposDirOf } from '../../infra/git/managed-repo.js';
import { bareRepositoriesUnder, RepoMaintainer } from '../../infra/git/maintenance.js';
import type { Core, Running } from './core.js';

/**
 * Repository maintenance (issue 24 item 10) runs with the workers: managed repositories
 * and mirrors are packed when they grew and on a schedule (infra/git/maintenance.ts),
 * beside reads and merges, never in a request's path.
 */
export function wireMaintenance(core: Core): Running {
  const { config, logger, roles } = core;
  if (!roles.worker) return {};
  const maintainer = new RepoMaintainer({
    repositories: () => bareRepositoriesUnder(reposDirOf(config), path.join(config.dataDir, 'mirrors')),
    logger: logger.child({ component: 'git-maintenance' }),
  });
  maintainer.start();
  return { stop: () => maintainer.stop() };
}
