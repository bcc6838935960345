import { randomUUID } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { DomainError } from '../../domain/errors.js';
import { pgCode, type Db, type Executor } from '../../infra/db/db.js';
import type { ProjectRecord } from '../../domain/project.js';
import { createManagedRepo, managedRepoPath, removeManagedRepo } from '../../infra/git/managed-repo.js';
import { relayRepoPath } from '../../infra/git/relay.js';
import { gitAuth } from '../../infra/git/credentials.js';
import { connectArgsFor } from '../../infra/git/remote-transport.js';
import { describeRepoProblem, fileRepoDir, localRepoProblem, probeRemote } from '../../infra/git/repo-reach.js';
import type { CheckedTarget } from '../../infra/git/url-policy.js';
import type { Logger } from '../../lib/logger.js';
import { accountsOfUser } from '../accounts/service.js';
import { projectQueries, type NewProject } from '../../sql/queries/projects.js';

/**
 * Projects: creation (slug choice, managed repository), deletion, and the reads the api
 * layer needs, so routes never hold a query. Which project a caller may see is decided
 * in `./access.ts` (for the API's routes and the dashboard's pages alike).
 */

export interface ProjectDeps {
  db: Db;
  /** Where managed repositories live (`reposDirOf(config)`). */
  reposDir: string;
}

export interface CreateProjectInput {
  userId: string;
  /** Default: the user's first account. */
  accountId?: string;
  name: string;
  /** A requested slug: taken is a 409. */
  slug?: string;
  /** Used when no slug is requested; the first free `<derivedSlug>-<n>` is taken. */
  derivedSlug: string;
  /** The remote's URL, credentials already split off (ignored for a managed project). */
  repoUrl: string;
  repoCredentialsEnc: string | null;
  defaultBranch: string;
  /** No remote: a repository hosted here, served at `<gitBase>/git/<slug>.git`. */
  managed: boolean;
  gitBase: string;
}

/**
 * A new project's repository must exist before the project does: a `file://` path is a git
 * repository, a remote answers `ls-remote` within the budget. Refused with a 400 naming the
 * path or host and the cause (not found, auth refused, unreachable), so a typo is caught
 * here rather than by every CR and session later. The URL policy has already passed.
 */
export async function assertRepoReachable(input: {
  url: string;
  credentials: { username: string; password: string } | null;
  target: CheckedTarget;
  allowHttpCredentials: boolean;
  defaultBranch: string;
  timeoutMs: number;
}): Promise<void> {
  const dir = fileRepoDir(input.url);
  const problem =
    dir !== null
      ? localRepoProblem(dir)
      : await probeRemote(input.url, {
          auth: gitAuth({ projectId: '', url: input.url, ...(input.credentials ? { credentials: input.credentials } : {}) }, { allowHttp: input.allowHttpCredentials }),
          connect: connectArgsFor(input.target),
          timeoutMs: input.timeoutMs,
          branch: input.defaultBranch,
        });
  if (!problem) return;
  const fix =
    problem.cause === 'auth refused'
      ? 'check the credentials (https://user:token@host/...) or the server\'s SSH key'
      : problem.cause === 'not found' || problem.cause === 'not a git repository'
        ? dir !== null
          ? 'create it first (git init --bare), or give the path of an existing repository'
          : 'check the URL, or create the repository first'
        : 'check the host and that this server can reach it';
  throw new DomainError('validation', 'Repository not reachable', `The repository ${describeRepoProblem(problem)}: ${fix}.`, {
    repository: problem.repository,
    cause: problem.cause,
    issues: [{ path: 'repo_url', message: problem.cause }],
  });
}

export async function createProject(deps: ProjectDeps, input: CreateProjectInput): Promise<ProjectRecord> {
  const { db } = deps;
  const { managed, defaultBranch } = input;
  const accounts = await accountsOfUser(db, input.userId);
  const accountId = input.accountId ?? accounts[0]?.account_id;
  if (!accountId || !accounts.some((a) => a.account_id === accountId)) {
    throw new DomainError('forbidden', 'Forbidden', 'You are not a member of that account.');
  }
  const base = input.slug ?? input.derivedSlug;
  const projectId = randomUUID();
  const repoPath = managed ? managedRepoPath(deps.reposDir, projectId) : '';
  let project: ProjectRecord | undefined;
  // Slugs are unique per account. A requested slug that is taken is a 409 naming it; a
  // derived one takes the first free `<base>-<n>`, read in one query (a race with
  // another create of the same name retries a few times, then 409).
  for (let round = 0; !project; round++) {
    let slug = base;
    if (!input.slug) {
      const taken = await slugsLike(db, accountId, base);
      for (let n = 2; taken.has(slug); n++) slug = `${base.slice(0, 56)}-${n}`;
    }
    try {
      project = await db.transaction(async (tx) => {
        const row = await insertProject(tx, {
          projectId,
          accountId,
          name: input.name,
          slug,
          repoUrl: managed ? `${input.gitBase}/git/${slug}.git` : input.repoUrl,
          repoCredentialsEnc: input.repoCredentialsEnc,
          defaultBranch,
          repoManaged: managed,
        });
        // In the transaction: a repository that cannot be created leaves no project.
        if (managed) await createManagedRepo(repoPath, defaultBranch);
        return row;
      });
    } catch (err) {
      if (managed) await removeManagedRepo(repoPath).catch(() => {});
      if (pgCode(err) !== '23505') throw err;
      if (input.slug || round >= 4) {
        throw new DomainError('conflict', 'Slug taken', `The slug '${slug}' is taken in this account; choose another.`, { slug });
      }
    }
  }
  return project;
}

/** Deletes the project, everything that cascades from it, and its managed repository. */
export async function deleteProject(deps: ProjectDeps & { logger: Logger; relayDir?: string }, project: ProjectRecord): Promise<void> {
  await removeProject(deps.db, project.project_id);
  // A remote project's relay repository (infra/git/relay.ts), if smart HTTP ever made one.
  if (!project.repo_managed && deps.relayDir) {
    await rm(relayRepoPath(deps.relayDir, project.project_id), { recursive: true, force: true }).catch((err: unknown) =>
      deps.logger.warn({ project_id: project.project_id, err: (err as Error).message }, 'could not remove a relay repository'),
    );
  }
  if (project.repo_managed) {
    await removeManagedRepo(managedRepoPath(deps.reposDir, project.project_id)).catch((err: unknown) =>
      deps.logger.warn({ project_id: project.project_id, err: (err as Error).message }, 'could not remove a managed repository'),
    );
  }
}

export type { NewProject } from '../../sql/queries/projects.js';

export async function projectById(db: Executor, projectId: string): Promise<ProjectRecord | undefined> {
  return db.one<ProjectRecord>(projectQueries.byId(projectId));
}

/** The projects listed for a project token: its own one, or none. */
export async function projectsById(db: Executor, projectId: string): Promise<ProjectRecord[]> {
  return db.rows<ProjectRecord>(projectQueries.byId(projectId));
}

/** By uuid or slug among the projects of the user's accounts. */
export async function projectByIdOrSlugForUser(db: Executor, ref: string, isUuid: boolean, userId: string): Promise<ProjectRecord | undefined> {
  return db.one<ProjectRecord>(projectQueries.byIdOrSlugForUser(ref, isUuid, userId));
}

/** The slugs of the account that start like `base` (to derive a free `<base>-<n>`). */
export async function slugsLike(db: Executor, accountId: string, base: string): Promise<Set<string>> {
  return new Set((await db.rows<{ slug: string }>(projectQueries.slugsLike(accountId, base))).map((r) => r.slug));
}

export async function insertProject(tx: Executor, p: NewProject): Promise<ProjectRecord> {
  return (await tx.one<ProjectRecord>(projectQueries.insert(p)))!;
}

/** One page of the user's projects, `limit` rows after the cursor; `cursor_at` orders them. */
export async function listProjectsForUser(
  db: Executor,
  userId: string,
  limit: number,
  after: { created_at: string; project_id: string } | null,
): Promise<(ProjectRecord & { cursor_at: string })[]> {
  return db.rows<ProjectRecord & { cursor_at: string }>(projectQueries.listForUser(userId, limit, after));
}

/** Deletes the project and everything that cascades from it. */
export async function removeProject(db: Executor, projectId: string): Promise<void> {
  await db.run(projectQueries.remove(projectId));
}
