import path from 'node:path';
import type { GitEngine, ProjectRepo } from './port.js';
import { openProjectRepo } from './open-repo.js';
import { repoCredentials } from './credentials.js';
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

/** Told of every set of branch tips read from a project's repository (whoever read them). */
export type TipsObserver = (project: ProjectRecord, tips: Record<string, string | null>) => void;

export function createProjectRepos(opts: {
  dataDir: string;
  reposDir?: string;
  engine: GitEngine;
  secrets: SecretBox;
  logger: Logger;
  policy?: RepoUrlPolicy;
  onTips?: TipsObserver;
}): ProjectRepos {
  const cache = new Map<string, ProjectRepo>();
  const reposDir = opts.reposDir ?? path.join(opts.dataDir, 'repos');
  // The project each cached repository was last handed out for (its default branch may change).
  const latest = new Map<ProjectRepo, ProjectRecord>();
  const observed = (repo: ProjectRepo, project: ProjectRecord): ProjectRepo => {
    latest.set(repo, project);
    return repo;
  };
  const watch = (repo: ProjectRepo): ProjectRepo => {
    const observer = opts.onTips;
    if (!observer) return repo;
    const read = repo.readTips.bind(repo);
    repo.readTips = async (branches) => {
      const tips = await read(branches);
      const project = latest.get(repo);
      if (project) observer(project, tips);
      return tips;
    };
    return repo;
  };
  const open = (project: ProjectRecord): ProjectRepo => {
    if (project.repo_managed) {
      const key = `managed\n${project.project_id}`;
      let repo = cache.get(key);
      if (!repo) {
        repo = watch(openManagedRepo({ repoPath: managedRepoPath(reposDir, project.project_id), engine: opts.engine, logger: opts.logger, projectId: project.project_id }));
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
      const credentials = repoCredentials(opts.secrets, project);
      repo = watch(openProjectRepo({
        location: { projectId: project.project_id, url: project.repo_url, ...(credentials ? { credentials } : {}) },
        mirrorsDir: path.join(opts.dataDir, 'mirrors'),
        engine: opts.engine,
        logger: opts.logger,
        ...(opts.policy ? { policy: opts.policy } : {}),
      }));
      cache.set(key, repo);
    }
    return repo;
  };
  return { for: (project) => observed(open(project), project) };
}
