import { Router, type Request } from 'express';
import { DomainError, validationError } from '../../domain/errors.js';
import type { ApiDeps, ApiSettings } from '../deps.js';
import { principalOf } from '../auth.js';
import { CreateProjectBody, ListProjectsQuery } from '../../contracts/projects.js';
import { setNextLink } from '../pagination.js';
import { resolveProject, serializeProject } from '../project-access.js';

/**
 * Where this server's managed repositories are served from, as stored in a new managed
 * project's `repo_url`: `SVC_PUBLIC_URL`; else the `SVC_PUBLIC_HOSTS` origin whose host the
 * request named (else the first); else the address this connection reached (the socket's,
 * never a header). Never the request's Host alone: a Host the operator did not list would
 * become the URL sandboxes send their clone credentials to.
 */
export function publicBaseUrl(req: Request, settings: Pick<ApiSettings, 'SVC_PUBLIC_URL' | 'SVC_PUBLIC_HOSTS'>): string {
  if (settings.SVC_PUBLIC_URL) return settings.SVC_PUBLIC_URL.replace(/\/+$/, '');
  const listed = settings.SVC_PUBLIC_HOSTS.split(',').map((s) => s.trim().replace(/\/+$/, '')).filter(Boolean);
  if (listed.length > 0) {
    const host = (req.get('host') ?? '').toLowerCase();
    return listed.find((o) => new URL(o).host === host) ?? listed[0]!;
  }
  let addr = (req.socket.localAddress ?? '127.0.0.1').replace(/^::ffff:/, '');
  if (addr === '::' || addr === '0.0.0.0') addr = '127.0.0.1';
  return `http://${addr.includes(':') ? `[${addr}]` : addr}:${req.socket.localPort}`;
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
    const project = await deps.services.projects.open({
      userId: p.user_id,
      accountId: body.account_id,
      name: body.name,
      slug: body.slug,
      repoUrl: body.repo_url,
      defaultBranch: body.default_branch,
      gitBase: publicBaseUrl(req, deps.settings),
    });
    res.status(201).json({ project: serializeProject(project) });
  });

  r.get('/', async (req, res) => {
    const p = principalOf(req);
    const q = ListProjectsQuery.parse(req.query);
    if (p.project_id) {
      res.json({ projects: (await deps.services.projects.byIdList(p.project_id)).map(serializeProject), next_cursor: null });
      return;
    }
    const after = q.cursor ? decodeProjectCursor(q.cursor) : null;
    const rows = await deps.services.projects.listForUser(p.user_id, q.per_page + 1, after);
    const more = rows.length > q.per_page;
    const shown = more ? rows.slice(0, q.per_page) : rows;
    const last = shown[shown.length - 1];
    const next = more && last ? Buffer.from(JSON.stringify({ c: last.cursor_at, id: last.project_id })).toString('base64url') : null;
    setNextLink(req, res, next);
    res.json({ projects: shown.map(serializeProject), next_cursor: next });
  });

  r.get('/:projectId', async (req, res) => {
    const project = await resolveProject(deps, req);
    res.json({ project: serializeProject(project) });
  });

  /** Deletes the project, everything that cascades from it, and its managed repository. */
  r.delete('/:projectId', async (req, res) => {
    if (principalOf(req).project_id) throw new DomainError('forbidden', 'Forbidden', 'Project tokens cannot delete projects; use a user token.');
    const project = await resolveProject(deps, req);
    await deps.services.projects.remove(project);
    res.status(204).end();
  });

  /** A project token for the CLI, acting as the caller, bound to this project. */
  r.post('/:projectId/cli-token', async (req, res) => {
    const p = principalOf(req);
    if (p.project_id) {
      // A project token lives as long as its sandbox; it may not mint one that outlives it.
      throw new DomainError('forbidden', 'Forbidden', 'Project tokens cannot mint tokens; use a user token.');
    }
    const project = await resolveProject(deps, req);
    const minted = await deps.services.projects.mintToken({ userId: p.user_id, projectId: project.project_id, name: 'cli' });
    res.status(201).json(minted);
  });

  return r;
}
