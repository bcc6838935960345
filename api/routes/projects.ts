import { randomUUID } from 'node:crypto';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Config } from '../../infra/config.js';
import { Router } from 'express';
import { DomainError, validationError } from '../../domain/errors.js';
import type { ApiDeps } from '../deps.js';
import { principalOf } from '../auth.js';
import { CreateProjectBody } from '../schemas.js';
import { resolveProject, serializeProject } from '../project-access.js';
import { accountQueries } from '../../sql/queries/accounts.js';
import { projectQueries } from '../../sql/queries/projects.js';
import { assertRemoteUrl } from '../../infra/git/remote-url.js';
import { mintToken } from '../../infra/tokens.js';
import type { ProjectRecord } from '../../infra/change-requests/repos.js';
import { pgCode } from '../../infra/db/db.js';
import { createManagedRepo, managedRepoPath, removeManagedRepo, reposDirOf } from '../../infra/git/managed-repo.js';
import type { Request } from 'express';

/** `SVC_PUBLIC_URL`, else this request's own origin (a sane Host header only). */
export function publicBaseUrl(req: Request, config: Config): string {
  if (config.SVC_PUBLIC_URL) return config.SVC_PUBLIC_URL.replace(/\/+$/, '');
  const host = req.get('host') ?? '';
  if (!/^[A-Za-z0-9.-]{1,253}(:[0-9]{1,5})?$|^\[[0-9A-Fa-f:.]{2,45}\](:[0-9]{1,5})?$/.test(host)) {
    throw validationError('The Host header is not a host name; set SVC_PUBLIC_URL on the server.');
  }
  return `${req.protocol === 'https' ? 'https' : 'http'}://${host}`;
}

const slugify = (name: string) =>
  name
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 50) || 'project';

/**
 * `https://user:token@host/repo` is accepted for convenience: the credentials are split
 * off and sealed; the stored and returned URL never carries them.
 */
function splitCredentials(raw: string): { url: string; credentials: { username: string; password: string } | null } {
  if (!/^https?:\/\//i.test(raw)) return { url: raw, credentials: null };
  let u: URL;
  try {
    u = new URL(raw);
  } catch {
    return { url: raw, credentials: null };
  }
  if (!u.username && !u.password) return { url: raw, credentials: null };
  const credentials = { username: decodeURIComponent(u.username), password: decodeURIComponent(u.password) };
  u.username = '';
  u.password = '';
  return { url: u.toString(), credentials };
}

/** `file://` repositories only when the operator allows them, and never inside the data dir. */
function assertRepoAllowed(url: string, config: Config): void {
  if (!url.toLowerCase().startsWith('file:')) return;
  if (!config.SVC_ALLOW_FILE_REPOS) {
    throw validationError('file:// repositories are disabled on this server (an operator can allow them with SVC_ALLOW_FILE_REPOS=1).', [
      { path: 'repo_url', message: 'file:// not allowed' },
    ]);
  }
  let target: string;
  try {
    target = path.resolve(fileURLToPath(url));
  } catch {
    throw validationError('repo_url is not a valid file:// URL.', [{ path: 'repo_url', message: 'invalid file URL' }]);
  }
  const dataDir = path.resolve(config.dataDir);
  if (target === dataDir || target.startsWith(dataDir + path.sep)) {
    throw validationError("repo_url must not point inside the server's data directory.", [{ path: 'repo_url', message: 'inside the data dir' }]);
  }
}

export function projectRoutes(deps: ApiDeps): Router {
  const r = Router();

  r.post('/', async (req, res) => {
    const p = principalOf(req);
    if (p.project_id) throw new DomainError('forbidden', 'Forbidden', 'Project tokens cannot create projects; use a user token.');
    const body = CreateProjectBody.parse(req.body ?? {});
    // No repo_url: a managed repository, hosted here and served at <public url>/git/<slug>.git.
    const managed = !body.repo_url;
    const { url, credentials } = managed ? { url: '', credentials: null } : splitCredentials(body.repo_url!);
    if (!managed) {
      assertRemoteUrl(url);
      assertRepoAllowed(url, deps.config);
    }
    const defaultBranch = body.default_branch ?? 'main';
    const gitBase = managed ? publicBaseUrl(req, deps.config) : '';
    const accounts = await deps.db.rows<{ account_id: string }>(accountQueries.accountsOfUser(p.user_id));
    const accountId = body.account_id ?? accounts[0]?.account_id;
    if (!accountId || !accounts.some((a) => a.account_id === accountId)) {
      throw new DomainError('forbidden', 'Forbidden', 'You are not a member of that account.');
    }
    const base = body.slug ?? slugify(body.name);
    let project: ProjectRecord | undefined;
    const projectId = randomUUID();
    const repoPath = managed ? managedRepoPath(reposDirOf(deps.config), projectId) : '';
    for (let i = 0; !project; i++) {
      const slug = i === 0 ? base : `${base.slice(0, 56)}-${i + 1}`;
      try {
        project = await deps.db.transaction(async (tx) => {
          const row = await tx.one<ProjectRecord>(
            projectQueries.insert({
              projectId,
              accountId,
              name: body.name,
              slug,
              repoUrl: managed ? `${gitBase}/git/${slug}.git` : url,
              repoCredentialsEnc: credentials ? deps.secrets.seal(JSON.stringify(credentials)) : null,
              defaultBranch,
              repoManaged: managed,
            }),
          );
          // In the transaction: a repository that cannot be created leaves no project.
          if (managed) await createManagedRepo(repoPath, defaultBranch);
          return row!;
        });
      } catch (err) {
        if (managed) await removeManagedRepo(repoPath).catch(() => {});
        if (pgCode(err) !== '23505') throw err;
        if (body.slug) throw new DomainError('conflict', 'Conflict', `The slug '${body.slug}' is taken.`);
        if (i > 20) throw err;
      }
    }
    res.status(201).json({ project: serializeProject(project) });
  });

  r.get('/', async (req, res) => {
    const p = principalOf(req);
    const rows = p.project_id
      ? await deps.db.rows<ProjectRecord>(projectQueries.byId(p.project_id))
      : await deps.db.rows<ProjectRecord>(projectQueries.listForUser(p.user_id));
    res.json({ projects: rows.map(serializeProject) });
  });

  r.get('/:projectId', async (req, res) => {
    const project = await resolveProject(deps.db, req);
    res.json({ project: serializeProject(project) });
  });

  /** Deletes the project, everything that cascades from it, and its managed repository. */
  r.delete('/:projectId', async (req, res) => {
    if (principalOf(req).project_id) throw new DomainError('forbidden', 'Forbidden', 'Project tokens cannot delete projects; use a user token.');
    const project = await resolveProject(deps.db, req);
    await deps.db.run(projectQueries.remove(project.project_id));
    if (project.repo_managed) {
      await removeManagedRepo(managedRepoPath(reposDirOf(deps.config), project.project_id)).catch((err: unknown) =>
        deps.logger.warn({ project_id: project.project_id, err: (err as Error).message }, 'could not remove a managed repository'),
      );
    }
    res.status(204).end();
  });

  /** A project token for the CLI, acting as the caller, bound to this project. */
  r.post('/:projectId/cli-token', async (req, res) => {
    const p = principalOf(req);
    if (p.project_id) {
      // A project token lives as long as its sandbox; it may not mint one that outlives it.
      throw new DomainError('forbidden', 'Forbidden', 'Project tokens cannot mint tokens; use a user token.');
    }
    const project = await resolveProject(deps.db, req);
    const minted = await mintToken(deps.db, { userId: p.user_id, projectId: project.project_id, name: 'cli' });
    res.status(201).json(minted);
  });

  return r;
}
