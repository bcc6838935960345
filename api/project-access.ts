import type { Request } from 'express';
import type { Project } from '../contracts/projects.js';
import { DomainError, notFound } from '../domain/errors.js';
import type { Db } from '../infra/db/db.js';
import type { ProjectRecord } from '../domain/project.js';
import { isMember } from '../services/accounts/service.js';
import { projectById, projectByIdOrSlugForUser } from '../services/projects/service.js';
import { principalOf } from './auth.js';
import type { Principal } from '../services/tokens/service.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

const forbidden = (message: string) => new DomainError('forbidden', 'Forbidden', message);

/**
 * Resolves `:projectId` (uuid or slug) and checks the caller may write to it. A user
 * token sees only the projects of its accounts: a slug is looked up within them, and a
 * project of another account answers 404 exactly like one that does not exist (no slug
 * or id enumeration). A project token sees only its own project (another one: 403, as the
 * spec says); both kinds act as their user, so one removed from the account loses access (403).
 */
export async function resolveProject(db: Db, req: Request): Promise<ProjectRecord> {
  return resolveProjectRef(db, principalOf(req), String(req.params.projectId ?? ''));
}

/** The same resolution for callers that hold a principal and a reference (smart HTTP's `/git/<slug-or-id>.git`). */
export async function resolveProjectRef(db: Db, principal: Principal, ref: string): Promise<ProjectRecord> {
  const isUuid = UUID.test(ref);
  // Postgres text cannot hold NUL (it would be a 500); no slug contains a control character.
  const lookable = ref.length > 0 && ref.length <= 128 && !/[\x00-\x1f\x7f]/.test(ref);
  if (principal.project_id) {
    const own = await projectById(db, principal.project_id);
    const matches = own && lookable && (isUuid ? own.project_id === ref.toLowerCase() : own.slug === ref);
    if (!own || !matches) throw forbidden('This project token is bound to another project.');
    const member = await isMember(db, own.account_id, principal.user_id);
    if (!member) throw forbidden('You do not have write access to this project.');
    return own;
  }
  const project = lookable
    ? await projectByIdOrSlugForUser(db, isUuid ? ref.toLowerCase() : ref, isUuid, principal.user_id)
    : undefined;
  if (!project) throw notFound('Project');
  return project;
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
