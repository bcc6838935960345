import path from 'node:path';
import type { GitEngine, ProjectRepo } from '../git/port.js';
import { openProjectRepo } from '../git/remote-repo.js';
import type { RepoUrlPolicy } from '../git/url-policy.js';
import { managedRepoPath, openManagedRepo } from '../git/managed-repo.js';
import { DomainError } from '../../domain/errors.js';
import type { Logger } from '../logger.js';
import type { SecretBox } from '../secrets.js';

export interface ProjectRecord {
  project_id: string;
  account_id: string;
  name: string;
  slug: string;
  repo_url: string | null;
  repo_credentials_enc: string | null;
  default_branch: string;
  created_at: Date;
  /** A bare repository this service hosts (issue 11), served at repo_url over smart HTTP. */
  repo_managed?: boolean;
}

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
