import type { Request } from 'express';
import type { Project } from '../contracts/projects.js';
import type { ApiDeps } from './deps.js';
import type { ProjectRecord } from '../domain/project.js';
import { principalOf } from './auth.js';

/**
 * Resolves `:projectId` (uuid or slug) and checks the caller may write to it: the rule
 * lives in services (`projectForCaller`), shared with the dashboard's page loaders. The
 * project was read with the token (`requireAuth`) when the path names it; otherwise it is
 * read here.
 */
export async function resolveProject(deps: Pick<ApiDeps, 'services'>, req: Request): Promise<ProjectRecord> {
  return deps.services.projects.forCaller(principalOf(req), String(req.params.projectId ?? ''), req.loadedProject);
}

export function serializeProject(p: ProjectRecord): Project {
  return {
    project_id: p.project_id,
    account_id: p.account_id,
    name: p.name,
    slug: p.slug,
    repo_url: p.repo_url,
    default_branch: p.default_branch,
    created_at: new Date(p.created_at).toISOString(),
  };
}
