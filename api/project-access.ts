import type { Request } from 'express';
import { DomainError, notFound } from '../domain/errors.js';
import type { Db } from '../infra/db/db.js';
import type { ProjectRecord } from '../infra/change-requests/repos.js';
import { accountQueries } from '../sql/queries/accounts.js';
import { projectQueries } from '../sql/queries/projects.js';
import { principalOf } from './auth.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

const forbidden = (message: string) => new DomainError('forbidden', 'Forbidden', message);

/**
 * Resolves `:projectId` (uuid or slug) and checks the caller may write to it: a project
 * token only its own project (anything else 403, as the spec says), a user token the
 * projects of accounts it belongs to (a project outside them: 403, write access missing).
 */
export async function resolveProject(db: Db, req: Request): Promise<ProjectRecord> {
  const principal = principalOf(req);
  const ref = String(req.params.projectId ?? '');
  const isUuid = UUID.test(ref);
  // Postgres text cannot hold NUL (it would be a 500); no slug contains a control character.
  const lookable = ref.length <= 128 && !/[\x00-\x1f\x7f]/.test(ref);
  const project = lookable ? await db.one<ProjectRecord>(projectQueries.byIdOrSlug(isUuid ? ref.toLowerCase() : ref, isUuid)) : undefined;
  if (principal.project_id) {
    if (!project || project.project_id !== principal.project_id) {
      throw forbidden('This project token is bound to another project.');
    }
  } else if (!project) {
    throw notFound('Project');
  }
  // Both kinds act as their user: one removed from the account loses every token's access.
  const member = await db.one(accountQueries.isMember(project.account_id, principal.user_id));
  if (!member) throw forbidden('You do not have write access to this project.');
  return project;
}

export function serializeProject(p: ProjectRecord) {
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
