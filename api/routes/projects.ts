import { Router } from 'express';
import type { Config } from '../../infra/config.js';
import { DomainError, validationError } from '../../domain/errors.js';
import type { ApiDeps } from '../deps.js';
import { principalOf } from '../auth.js';
import { CreateProjectBody, ListProjectsQuery } from '../../contracts/projects.js';
import { setNextLink } from '../pagination.js';
import { resolveProject, serializeProject } from '../project-access.js';
import { assertRepoReachable, createProject, deleteProject, listProjectsForUser, projectsById } from '../../services/projects/service.js';
import { checkRepoUrl, repoUrlPolicy } from '../../infra/git/url-policy.js';
import { mintToken } from '../../services/tokens/service.js';
import { reposDirOf } from '../../infra/git/managed-repo.js';
import { relayDirOf } from '../../infra/git/relay.js';
import type { Request } from 'express';

/**
 * Where this server's managed repositories are served from, as stored in a new managed
 * project's `repo_url`: `SVC_PUBLIC_URL`; else the `SVC_PUBLIC_HOSTS` origin whose host the
 * request named (else the first); else the address this connection reached (the socket's,
 * never a header). Never the request's Host alone: a Host the operator did not list would
 * become the URL sandboxes send their clone credentials to.
 */
export function publicBaseUrl(req: Request, config: Config): string {
  if (config.SVC_PUBLIC_URL) return config.SVC_PUBLIC_URL.replace(/\/+$/, '');
  const listed = config.SVC_PUBLIC_HOSTS.split(',').map((s) => s.trim().replace(/\/+$/, '')).filter(Boolean);
  if (listed.length > 0) {
    const host = (req.get('host') ?? '').toLowerCase();
    return listed.find((o) => new URL(o).host === host) ?? listed[0]!;
  }
  let addr = (req.socket.localAddress ?? '127.0.0.1').replace(/^::ffff:/, '');
  if (addr === '::' || addr === '0.0.0.0') addr = '127.0.0.1';
  return `http://${addr.includes(':') ? `[${addr}]` : addr}:${req.socket.localPort}`;
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

function decodeProjectCursor(cursor: string): { created_at: string; project_id: string } {
  try {
    const v = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as { c?: unknown; id?: unknown };
    if (typeof v.c === 'string' && /^\d{4}-\d\d-\d\dT[\d:.]+Z$/.test(v.c) && typeof v.id === 'string' && /^[0-9a-f-]{36}$/.test(v.id)) {
      return { created_at: v.c, project_id: v.id };
    }
  } catch {
    /* below */
  }
  throw validationError('cursor is not one this server gave out; start again without it.', [{ path: 'cursor', message: 'invalid cursor' }]);
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
    const defaultBranch = body.default_branch ?? 'main';
    if (!managed) {
      const target = await checkRepoUrl(url, repoUrlPolicy(deps.config), { hasCredentials: credentials !== null });
      await assertRepoReachable({
        url,
        credentials,
        target,
        allowHttpCredentials: deps.config.SVC_REPO_ALLOW_HTTP_CREDENTIALS,
        defaultBranch,
        timeoutMs: deps.config.SVC_REPO_CHECK_TIMEOUT_MS,
      });
    }
    const gitBase = managed ? publicBaseUrl(req, deps.config) : '';
    const project = await createProject(
      { db: deps.db, reposDir: reposDirOf(deps.config) },
      {
        userId: p.user_id,
        accountId: body.account_id,
        name: body.name,
        slug: body.slug,
        derivedSlug: slugify(body.name),
        repoUrl: url,
        repoCredentialsEnc: credentials ? deps.secrets.seal(JSON.stringify(credentials)) : null,
        defaultBranch,
        managed,
        gitBase,
      },
    );
    res.status(201).json({ project: serializeProject(project) });
  });

  r.get('/', async (req, res) => {
    const p = principalOf(req);
    const q = ListProjectsQuery.parse(req.query);
    if (p.project_id) {
      res.json({ projects: (await projectsById(deps.db, p.project_id)).map(serializeProject), next_cursor: null });
      return;
    }
    const after = q.cursor ? decodeProjectCursor(q.cursor) : null;
    const rows = await listProjectsForUser(deps.db, p.user_id, q.per_page + 1, after);
    const more = rows.length > q.per_page;
    const shown = more ? rows.slice(0, q.per_page) : rows;
    const last = shown[shown.length - 1];
    const next = more && last ? Buffer.from(JSON.stringify({ c: last.cursor_at, id: last.project_id })).toString('base64url') : null;
    setNextLink(req, res, next);
    res.json({ projects: shown.map(serializeProject), next_cursor: next });
  });

  r.get('/:projectId', async (req, res) => {
    const project = await resolveProject(deps.db, req);
    res.json({ project: serializeProject(project) });
  });

  /** Deletes the project, everything that cascades from it, and its managed repository. */
  r.delete('/:projectId', async (req, res) => {
    if (principalOf(req).project_id) throw new DomainError('forbidden', 'Forbidden', 'Project tokens cannot delete projects; use a user token.');
    const project = await resolveProject(deps.db, req);
    await deleteProject({ db: deps.db, reposDir: reposDirOf(deps.config), relayDir: relayDirOf(deps.config), logger: deps.logger }, project);
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
