import { Router, type Request } from 'express';
import type { ApiDeps } from '../deps.js';
import { principalOf } from '../auth.js';
import { resolveProject } from '../project-access.js';
import { PatchSecretsBody, PutSecretBody } from '../../contracts/manifest.js';
import { getManifest, type ManifestDeps } from '../../services/manifest/sync.js';
import { changeSecrets, deleteSecret, listSecrets, putSecret, type SecretsDeps, type SecretsListing } from '../../services/secrets/service.js';
import type { ProjectRecord } from '../../domain/project.js';
import { APP_DEPLOY } from '../../services/apps/sync.js';


export function manifestDepsOf(deps: ApiDeps): ManifestDeps {
  const queue = deps.queue;
  return {
    db: deps.db,
    repos: deps.repos,
    logger: deps.logger,
    enqueueApp: async (job) => void (await queue.enqueue(APP_DEPLOY, job)),
  };
}

export function secretsDepsOf(deps: ApiDeps): SecretsDeps {
  return { db: deps.db, box: deps.secrets, ...(deps.onSecretsChanged ? { onChange: deps.onSecretsChanged } : {}) };
}

/** A project's secret names with the manifest's `[env]` spec (the route and the dashboard's secrets page). */
export async function secretsListing(deps: ApiDeps, project: ProjectRecord): Promise<SecretsListing> {
  // The [env] spec comes from the manifest: read it once for a project never synced.
  await getManifest(manifestDepsOf(deps), project).catch((err: Error) => deps.logger.debug({ err: err.message }, 'manifest unavailable for the secrets listing'));
  return listSecrets(deps.db, project.project_id);
}

/**
 * `/v1/projects/:projectId/manifest` and `/secrets`. Secret values come in, never go out:
 * no response, log line or event carries one.
 */
export function manifestRoutes(deps: ApiDeps): Router {
  const r = Router({ mergeParams: true });
  const secretsDeps = secretsDepsOf(deps);
  const ctx = async (req: Request) => ({ project: await resolveProject(deps.db, req), actor: principalOf(req).user_id });

  r.get('/manifest', async (req, res) => {
    const { project } = await ctx(req);
    const view = await getManifest(manifestDepsOf(deps), project);
    res.json({ manifest: view.manifest, source_sha: view.source_sha, errors: view.errors, warnings: view.warnings });
  });

  r.get('/secrets', async (req, res) => {
    const { project } = await ctx(req);
    res.json(await secretsListing(deps, project));
  });

  r.put('/secrets/:name', async (req, res) => {
    const { project, actor } = await ctx(req);
    const body = PutSecretBody.parse(req.body ?? {});
    await putSecret(secretsDeps, project.project_id, actor, String(req.params.name), body.value);
    res.status(204).end();
  });

  r.delete('/secrets/:name', async (req, res) => {
    const { project, actor } = await ctx(req);
    await deleteSecret(secretsDeps, project.project_id, actor, String(req.params.name));
    res.status(204).end();
  });

  r.patch('/secrets', async (req, res) => {
    const { project, actor } = await ctx(req);
    const body = PatchSecretsBody.parse(req.body ?? {});
    await changeSecrets(secretsDeps, project.project_id, actor, body);
    res.json(await listSecrets(deps.db, project.project_id));
  });

  return r;
}
