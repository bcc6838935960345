import { DomainError, notFound } from '../../domain/errors.js';
import type { Executor } from '../../infra/db/db.js';
import type { ProjectRecord } from '../../domain/project.js';
import type { ChangeRequest } from '../../domain/change-request/index.js';
import { isMember } from '../accounts/service.js';
import { projectById, projectByIdOrSlugForUser } from './service.js';

/**
 * Which project a caller may touch: the one access rule of the REST routes
 * (`api/project-access.ts`), the smart HTTP routes and the dashboard's page loaders.
 */
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** Who is asking: a user (a user token or a signed-in browser), or a project token (`project_id` set). */
export interface ProjectCaller {
  user_id: string;
  project_id: string | null;
}

/**
 * The project a request names as its authentication read it, in the same statement as the
 * token (`authenticateWithProject`): `ref` the reference as the request gave it, `project`
 * a project token's own project or the project that reference names for a user (null:
 * none), `member` whether the token's user is a member of its account: a user is served
 * only a project of their accounts, a project token only while its user is a member. Read
 * for one request and used by it alone: never kept beyond it.
 */
export interface LoadedProject {
  ref: string;
  project: ProjectRecord | null;
  member: boolean;
  /** The project's CR by number, read in the same statement when the route reads it first (null: none). */
  cr?: { number: number; cr: ChangeRequest | null };
}

/**
 * The CR `number` of `project` as the request's authentication read it, once the access
 * rule gave the caller `project`: the CR (null: none with that number), or undefined when
 * it was not read with it (then the route reads it).
 */
export function loadedCrOf(loaded: LoadedProject | undefined, project: ProjectRecord, number: number | null): ChangeRequest | null | undefined {
  if (!loaded?.cr || number === null || loaded.cr.number !== number || loaded.project?.project_id !== project.project_id) return undefined;
  const cr = loaded.cr.cr;
  return cr && cr.project_id === project.project_id ? cr : cr === null ? null : undefined;
}

const forbidden = (message: string) => new DomainError('forbidden', 'Forbidden', message);

/**
 * Resolves a project reference (uuid or slug) for a caller who needs write access. A user
 * sees only the projects of their accounts: a slug is looked up within them, and a project
 * of another account answers 404 exactly like one that does not exist (no slug or id
 * enumeration). A project token sees only its own project (another one: 403, as the spec
 * says); both kinds act as their user, so one removed from the account loses access (403).
 */
export async function projectForCaller(db: Executor, caller: ProjectCaller, ref: string, loaded?: LoadedProject): Promise<ProjectRecord> {
  // Read with the caller's token for this very request: the same rules on the same rows.
  if (loaded && loaded.ref === ref) {
    const project = loaded.project ?? undefined;
    return caller.project_id ? ownProjectOf(ref, project, () => loaded.member) : userProjectOf(loaded.member ? project : undefined);
  }
  const target = projectRefOf(ref);
  if (caller.project_id) {
    const own = await projectById(db, caller.project_id);
    return ownProjectOf(ref, own, async () => !!own && (await isMember(db, own.account_id, caller.user_id)));
  }
  const project = target ? await projectByIdOrSlugForUser(db, target.ref, target.isUuid, caller.user_id) : undefined;
  return userProjectOf(project);
}

/**
 * A project reference as it is looked up: a uuid (lowercased) or a slug; null for one no
 * project can have (empty, over 128 characters, a control character: Postgres text cannot
 * hold NUL, it would be a 500).
 */
export function projectRefOf(ref: string): { ref: string; isUuid: boolean } | null {
  if (ref.length === 0 || ref.length > 128 || /[\x00-\x1f\x7f]/.test(ref)) return null;
  const isUuid = UUID.test(ref);
  return { ref: isUuid ? ref.toLowerCase() : ref, isUuid };
}

/** A user's lookup (`projectByIdOrSlugForUser`): 404 when none, whether missing or another account's. */
export function userProjectOf(project: ProjectRecord | undefined): ProjectRecord {
  if (!project) throw notFound('Project');
  return project;
}

/**
 * A project token's project: its own (`own`), and only when `ref` names it and its user is
 * still a member of the project's account (`member`), else 403.
 */
export async function ownProjectOf(ref: string, own: ProjectRecord | undefined, member: () => boolean | Promise<boolean>): Promise<ProjectRecord> {
  const target = projectRefOf(ref);
  const matches = own && target && (target.isUuid ? own.project_id === target.ref : own.slug === target.ref);
  if (!own || !matches) throw forbidden('This project token is bound to another project.');
  if (!(await member())) throw forbidden('You do not have write access to this project.');
  return own;
}
