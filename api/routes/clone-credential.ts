import { Router } from 'express';
import { DomainError } from '../../domain/errors.js';
import type { ApiDeps } from '../deps.js';
import { unauthorized } from '../auth.js';
import type { ProjectRecord } from '../../domain/project.js';
import { checkGateway } from '../gateway.js';
import { sessionsOf } from './sessions.js';

export const CLONE_CREDENTIAL_MINUTES = 15;

/**
 * `GET /v1/projects/:projectId/git/clone-credential`: the one route that takes a
 * sandbox's SVC_TOKEN (and nothing else): a short-lived credential for the project's
 * repository, always agent-grade (services/tokens/agent-policy.ts): a project token of the
 * sandbox's own session that expires in 15 minutes, as the password for user
 * `x-access-token`, for a repository this server serves: the server's own smart HTTP
 * (a managed repository, or a remote one through its relay, infra/git/relay.ts), or a
 * local path. A remote's stored credentials never leave the server (they would push the
 * remote's default branch directly); a clone URL on another host gets nothing (404).
 * Mounted before the PAT middleware.
 */
function origin(url: string): string | null {
  try {
    return new URL(url).origin;
  } catch {
    return null;
  }
}

function servedHere(project: ProjectRecord, repoUrl: string, apiUrl: string): boolean {
  if (project.repo_managed) return true;
  if (/^file:/i.test(repoUrl) || repoUrl.startsWith('/')) return true;
  if (!/^[a-z][a-z0-9+.-]*:\/\//i.test(repoUrl)) return false; // scp-like `host:path`: another host
  const o = origin(repoUrl);
  return o !== null && o === origin(apiUrl);
}

export function cloneCredentialRoutes(deps: ApiDeps): Router {
  const r = Router({ mergeParams: true });
  r.get('/', async (req, res) => {
    const header = req.headers.authorization;
    const m = /^Bearer ([^\s]+)$/i.exec(String(header ?? '').trim());
    // Guesses count against the caller's bucket, as on every other credential check.
    const sandbox =
      header === undefined ? null : await deps.guard.attempt(req, () => (m ? deps.services.auth.sandboxKey(m[1]!) : Promise.resolve(null)));
    if (!sandbox) throw unauthorized();
    checkGateway(req, { sandbox_id: sandbox.sandbox_id, provider: await deps.services.auth.sandboxProvider(sandbox.sandbox_id) });
    // The key names its project: `:projectId` must be that project (uuid or slug; slugs are
    // unique per account only, so never looked up server-wide). Another project's key learns
    // nothing about this one.
    const ref = String((req.params as Record<string, string>).projectId ?? '');
    const project = await deps.services.projects.byId(sandbox.project_id);
    if (!project || (ref.toLowerCase() !== project.project_id && ref !== project.slug)) throw unauthorized();
    const expires = new Date(Date.now() + CLONE_CREDENTIAL_MINUTES * 60_000);
    const repoUrl = sessionsOf(deps).repoUrlOf(project);
    res.set('Cache-Control', 'no-store');
    // A token of this server goes only to a repository this server serves (or a local
    // path, which never sends it anywhere): never to a third-party host.
    if (!servedHere(project, repoUrl, sessionsOf(deps).apiUrl())) {
      throw new DomainError(
        'not_found',
        'No credential',
        project.repo_credentials_enc
          ? "This repository's stored credentials never enter a sandbox; it is cloned without a credential."
          : 'No credential is stored for this repository; it is cloned without one.',
      );
    }
    // Recorded against the sandbox: stopping, restarting or removing the session revokes it at once.
    const minted = await deps.services.sandboxes.mintCloneCredential(sandbox.sandbox_id, expires);
    if (!minted) throw unauthorized();
    res.json({ username: 'x-access-token', password: minted.token, expires_at: expires.toISOString(), repo_url: repoUrl });
  });
  return r;
}
