import { randomUUID } from 'node:crypto';
import { mkdir, rm } from 'node:fs/promises';
import path from 'node:path';
import type { Db } from '../db/db.js';
import type { Logger } from '../logger.js';
import type { SecretBox } from '../secrets.js';
import type { ProjectRecord, ProjectRepos } from '../change-requests/repos.js';
import { freePort } from '../net.js';
import { appQueries, type AppRow } from '../../sql/queries/apps.js';
import { projectQueries } from '../../sql/queries/projects.js';
import { appendLog, SYSTEM_ACTOR } from '../manifest/log.js';
import { sandboxSecrets } from '../secrets/sandbox-env.js';
import { startAppProcess, stopPid, waitHealthy } from './runner.js';
import type { AppJob } from './sync.js';

export interface AppDeps {
  db: Db;
  repos: ProjectRepos;
  logger: Logger;
  box: SecretBox;
  dataDir: string;
  /** Host in app URLs (default 127.0.0.1). */
  publicHost?: string;
  healthTimeoutMs?: number;
  /** False: deploys are refused (recorded as failed), SVC_APPS=0. */
  enabled?: boolean;
}

const log = (deps: AppDeps, projectId: string, type: string, data: Record<string, unknown>) =>
  deps.db.transaction((tx) => appendLog(tx, 'apps', projectId, [{ type, data }], SYSTEM_ACTOR));

/**
 * `app.deploy`: runs the app from the merged commit (its tree exported with `git archive`,
 * its command run with PORT set), waits for its health path, switches the app's URL to
 * it and stops the previous process. A failed deploy leaves the previous one serving.
 */
export async function runAppJob(deps: AppDeps, job: AppJob): Promise<void> {
  const app = await deps.db.one<AppRow>(appQueries.get(job.project_id, job.name));
  if (!app) return;
  if (job.action === 'stop') {
    if (!app.removed) return; // re-added since
    if (app.pid) await stopPid(app.pid);
    await deps.db.run(appQueries.setStopped(job.project_id, job.name));
    await log(deps, job.project_id, 'AppStopped', { name: job.name });
    return;
  }
  if (app.removed || app.manifest_hash !== job.manifest_hash) return; // superseded by a later sync
  const project = await deps.db.one<ProjectRecord>(projectQueries.byId(job.project_id));
  if (!project) return;
  const deployId = randomUUID();
  await deps.db.run(appQueries.deployStarted({ deployId, projectId: job.project_id, name: job.name, commit: job.commit_sha, hash: job.manifest_hash }));
  await deps.db.run(appQueries.setStatus(job.project_id, job.name, 'deploying', null));
  await log(deps, job.project_id, 'AppDeployStarted', { name: job.name, deploy_id: deployId, commit_sha: job.commit_sha, manifest_hash: job.manifest_hash });

  const root = path.join(deps.dataDir, 'apps', job.project_id, job.name);
  const dir = path.join(root, deployId);
  let proc: ReturnType<typeof startAppProcess> | undefined;
  try {
    await mkdir(dir, { recursive: true });
    await deps.repos.for(project).exportTree(job.commit_sha, dir);
    const port = await freePort();
    const secrets = await sandboxSecrets(deps.db, deps.box, job.project_id);
    const env: Record<string, string> = {
      PATH: process.env.PATH ?? '/usr/bin:/bin',
      HOME: dir,
      ...secrets.env,
      ...(app.spec.env ?? {}),
      PORT: String(port),
      SVC_APP_NAME: job.name,
      SVC_COMMIT_SHA: job.commit_sha,
    };
    if (deps.enabled === false) throw new Error('apps are disabled on this server (SVC_APPS=0)');
    proc = startAppProcess({ command: app.spec.command, cwd: dir, env, logFile: path.join(root, `${deployId}.log`) });
    const host = deps.publicHost ?? '127.0.0.1';
    const url = `http://${host}:${port}`;
    const problem = await waitHealthy(`http://127.0.0.1:${port}${app.spec.health_path ?? '/'}`, proc, deps.healthTimeoutMs ?? 60_000);
    if (problem) throw new Error(problem);
    // The app's URL and its deploy record switch together: a reader never sees one without the other.
    const switched = await deps.db.transaction(async (tx) => {
      const n = await tx.run(appQueries.setLive({ projectId: job.project_id, name: job.name, hash: job.manifest_hash, commit: job.commit_sha, url, pid: proc!.pid }));
      await tx.run(appQueries.deployFinished(deployId, n ? 'live' : 'superseded', n ? url : null, null));
      return n > 0;
    });
    if (!switched) {
      // A newer manifest (or a removal) arrived while this one started: it is not the one to serve.
      await proc.stop();
      return;
    }
    if (app.pid && app.pid !== proc.pid) await stopPid(app.pid);
    await log(deps, job.project_id, 'AppDeployed', { name: job.name, deploy_id: deployId, commit_sha: job.commit_sha, url });
    deps.logger.info({ project_id: job.project_id, app: job.name, url, commit: job.commit_sha }, 'app live');
  } catch (err) {
    const message = (err instanceof Error ? err.message : String(err)).slice(0, 1000);
    await proc?.stop();
    await rm(dir, { recursive: true, force: true }).catch(() => {});
    await deps.db.transaction(async (tx) => {
      await tx.run(appQueries.setStatus(job.project_id, job.name, app.pid ? 'live' : 'failed', message));
      await tx.run(appQueries.deployFinished(deployId, 'failed', null, message));
    });
    await log(deps, job.project_id, 'AppDeployFailed', { name: job.name, deploy_id: deployId, commit_sha: job.commit_sha, error: message });
    deps.logger.warn({ project_id: job.project_id, app: job.name, err: message }, 'app deploy failed');
  }
}

export function serializeApp(a: AppRow) {
  return {
    name: a.name,
    status: a.removed ? 'removed' : a.status,
    commit_sha: a.commit_sha,
    url: a.url,
    manifest_hash: a.manifest_hash,
    deployed_at: a.deployed_at ? new Date(a.deployed_at).toISOString() : null,
    last_error: a.last_error,
  };
}
