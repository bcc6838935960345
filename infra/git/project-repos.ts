import path from 'node:path';
import type { GitEngine, ProjectRepo } from './port.js';
import { openProjectRepo } from './open-repo.js';
import type { RepoUrlPolicy } from './url-policy.js';
import { managedRepoPath, openManagedRepo } from './managed-repo.js';
import { DomainError } from '../../domain/errors.js';
import type { Logger } from '../../lib/logger.js';
import type { SecretBox } from '../secret-box.js';
import type { ProjectRecord } from '../../domain/project.js';

/** Hands out each project's repository; one instance per project and URL per process. */
export interface ProjectRepos {
  for(project: ProjectRecord): ProjectRepo;
}

export function createProjectRepos(opts: { dataDir: string; reposDir?: string; engine: GitEngine; secrets: SecretBox; logger: Logger; policy?: RepoUrlPolicy }): ProjectRepos {
  const cache = new Map<string, ProjectRepo>();
  const reposDir = opts.reposDir ?? path.join(opts.dataDir, 'repos');
  return {
    for(project) {
      if (project.repo_managed) {
        const key = `managed\n${project.project_id}`;
        let repo = cache.get(key);
        if (!repo) {
          repo = openManagedRepo({ repoPath: managedRepoPath(reposDir, project.project_id), engine: opts.engine, logger: opts.logger, projectId: project.project_id });
          cache.set(key, repo);
        }
        return repo;
      }
      if (!project.repo_url) {
        throw new DomainError('unavailable', 'No repository', `Project ${project.slug} has no repository configured.`);
      }
      const key = `${project.project_id}\n${project.repo_url}\n${project.repo_credentials_enc ?? ''}`;
      let repo = cache.get(key);
      if (!repo) {
        const credentials = project.repo_credentials_enc
          ? (JSON.parse(opts.secrets.open(project.repo_credentials_enc)) as { username: string; password: string })
          : undefined;
        repo = openProjectRepo({
          location: { projectId: project.project_id, url: project.repo_url, ...(credentials ? { credentials } : {}) },
          mirrorsDir: path.join(opts.dataDir, 'mirrors'),
          engine: opts.engine,
          logger: opts.logger,
          ...(opts.policy ? { policy: opts.policy } : {}),
        });
        cache.set(key, repo);
      }
      return repo;
    },
  };
}
