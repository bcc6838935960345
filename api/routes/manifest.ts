import { Router, type Request } from 'express';
import type { ApiDeps } from '../deps.js';
import { principalOf } from '../auth.js';
import { resolveProject } from '../project-access.js';
import { PatchSecretsBody, PutSecretBody } from '../../contracts/manifest.js';

/**
 * `/v1/projects/:projectId/manifest` and `/secrets`. Secret values come in, never go out:
 * no response, log line or event carries one.
 */
export function manifestRoutes(deps: ApiDeps): Router {
  const r = Router({ mergeParams: true });
  const manifest = deps.services.manifest;
  const ctx = async (req: Request) => ({ project: await resolveProject(deps, req), actor: principalOf(req).user_id });

  r.get('/manifest', async (req, res) => {
    const { project } = await ctx(req);
    const view = await manifest.get(project);
    res.json({ manifest: view.manifest, source_sha: view.source_sha, errors: view.errors, warnings: view.warnings });
  });

  r.get('/secrets', async (req, res) => {
    const { project } = await ctx(req);
    res.json(await manifest.secrets(project));
  });

  r.put('/secrets/:name', async (req, res) => {
    const { project, actor } = await ctx(req);
    const body = PutSecretBody.parse(req.body ?? {});
    await manifest.putSecret(project.project_id, actor, String(req.params.name), body.value);
    res.status(204).end();
  });

  r.delete('/secrets/:name', async (req, res) => {
    const { project, actor } = await ctx(req);
    await manifest.deleteSecret(project.project_id, actor, String(req.params.name));
    res.status(204).end();
  });

  r.patch('/secrets', async (req, res) => {
    const { project, actor } = await ctx(req);
    const body = PatchSecretsBody.parse(req.body ?? {});
    await manifest.changeSecrets(project.project_id, actor, body);
    res.json(await manifest.secretNames(project.project_id));
  });

  return r;
}
