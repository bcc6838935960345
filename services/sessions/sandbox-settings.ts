import { MANIFEST_PATH, parseManifest } from '../../domain/manifest/parse.js';
import type { Manifest } from '../../domain/manifest/schema.js';
import { manifestQueries } from '../../sql/queries/manifest.js';
import type { ProjectRecord } from '../../domain/project.js';
import { SandboxError, type SandboxProviderName, type SandboxSpec } from '../../infra/sandbox/port.js';
import type { SessionDeps } from './deps.js';

/** The Dockerfile docker sandboxes build when the manifest names none and the repo has one. */
const DEFAULT_DOCKERFILE = '.svc/Dockerfile';

export type SandboxSettings = Pick<SandboxSpec, 'image' | 'dockerfile' | 'resources'>;

/**
 * The manifest in force for the project (what the last valid sync stored). A project never
 * synced yet (created since the workers started, before its first merge or manifest read):
 * with `readUnsynced`, the `svc.toml` at its default branch's tip, read and parsed, not
 * stored (the sync, which also moves triggers and apps, stays the manifest feature's).
 */
export async function manifestInForce(deps: Pick<SessionDeps, 'db' | 'repos'>, project: ProjectRecord, readUnsynced = true): Promise<Manifest | null> {
  const row = await deps.db.one<{ manifest: Manifest | null }>(manifestQueries.get(project.project_id));
  if (row || !readUnsynced) return row?.manifest ?? null;
  const repo = deps.repos.for(project);
  const tip = (await repo.readTips([project.default_branch]))[project.default_branch];
  const bytes = tip ? await repo.readFileAt(tip, MANIFEST_PATH) : null;
  return bytes ? parseManifest(bytes.toString('utf8')).manifest : null;
}

/**
 * The project's `[sandbox]` settings for a session's sandbox (docs/manifest.md):
 *   - `image` wins; else, on docker only, the Dockerfile (`dockerfile`, default
 *     `.svc/Dockerfile`) read at the session's base commit. A `dockerfile` the manifest
 *     names and the commit lacks fails the sandbox; a missing default is no Dockerfile.
 *   - `cpus`, `memory_mb` → `resources`, for every provider, capped by the server
 *     (SVC_SANDBOX_MAX_*; infra/sandbox/limits.ts): docker, kubernetes and bwrap with a
 *     cgroup enforce them; process does not, and says so in the log.
 */
export async function sandboxSettings(
  deps: Pick<SessionDeps, 'db' | 'repos' | 'logger'>,
  provider: SandboxProviderName,
  project: ProjectRecord,
  baseSha: string,
): Promise<SandboxSettings> {
  // Only containers apply what the manifest says at creation: process and bwrap read no git
  // for a project never synced (the provisioning path stays one query longer, no more).
  const containers = provider === 'docker' || provider === 'kubernetes';
  const sb = (await manifestInForce(deps, project, containers))?.sandbox ?? {};
  const out: SandboxSettings = {};
  if (sb.cpus !== undefined || sb.memory_mb !== undefined) {
    out.resources = { ...(sb.cpus !== undefined ? { cpus: sb.cpus } : {}), ...(sb.memory_mb !== undefined ? { memoryMb: sb.memory_mb } : {}) };
  }
  if (sb.image) out.image = sb.image;
  else if (provider === 'docker') {
    const file = sb.dockerfile ?? DEFAULT_DOCKERFILE;
    const bytes = await deps.repos.for(project).readFileAt(baseSha, file);
    if (bytes) out.dockerfile = bytes.toString('utf8');
    else if (sb.dockerfile) {
      throw new SandboxError('create_failed', `svc.toml [sandbox] dockerfile '${file}' is not in the repository at the session's base commit ${baseSha.slice(0, 12)}.`);
    }
  }
  const log = deps.logger.child({ project_id: project.project_id, provider });
  if ((provider === 'process' || provider === 'bwrap') && (sb.image || sb.dockerfile || out.resources)) {
    log.warn({ sandbox: sb }, `svc.toml [sandbox] image and dockerfile are not applied by the ${provider} provider (no container); cpus and memory_mb only where it can make a cgroup (bwrap), else the server's caps apply as rlimits and nice`);
  }
  if (provider === 'kubernetes' && sb.dockerfile && !sb.image) log.warn({ dockerfile: sb.dockerfile }, 'svc.toml [sandbox] dockerfile is not built on kubernetes: set [sandbox] image');
  return out;
}
