import { randomUUID } from 'node:crypto';
import type { App } from '../../contracts/manifest.js';
import { mkdir, rm } from 'node:fs/promises';
import path from 'node:path';
import type { Db } from '../../infra/db/db.js';
import type { Logger } from '../../lib/logger.js';
import type { SecretBox } from '../../infra/secret-box.js';
import type { ProjectRepos } from '../../infra/git/project-repos.js';
import type { ProjectRecord } from '../../domain/project.js';
import { freePort } from '../../lib/net.js';
import { appQueries, type AppRow } from '../../sql/queries/apps.js';
import { projectQueries } from '../../sql/queries/projects.js';
import { appendLog, SYSTEM_ACTOR } from '../manifest/audit-log.js';
import { sandboxSecrets } from '../secrets/sandbox-env.js';
import type { SandboxHandle, SandboxProvider } from '../../infra/sandbox/port.js';
import { EXITED, stopLegacyPid, waitHealthy, type OwnedApps } from './runner.js';
import { isSocketUrl } from '../../lib/sandbox-dial.js';
import type { AppJob } from './sync.js';
import { redactLog, sandboxLogTail, tailOf } from '../sessions/failure-log.js';

export interface AppDeps {
  db: Db;
  repos: ProjectRepos;
  logger: Logger;
  box: SecretBox;
  dataDir: string;
  /** The app sandboxes this worker started (stopped with it). */
  owned: OwnedApps;
  /** The sandbox provider app versions run on (the sessions' one: process or bwrap). */
  provider?: SandboxProvider;
  /** The app's public URL (its own origin, served by the API: services/apps/origin.ts). */
  urlOf: (name: string, projectId: string) => string;
  healthTimeoutMs?: number;
  /** False: deploys are refused (recorded as failed), SVC_APPS=0. */
  enabled?: boolean;
}

/** How many times a version that exits before it answers is started. */
const APP_STARTS = 2;

/** How much of a failed version's log its error keeps. */
const APP_LOG_TAIL = 1500;

const log = (deps: AppDeps, projectId: string, type: string, data: Record<string, unknown>) =>
  deps.db.transaction((tx) => appendLog(tx, 'apps', projectId, [{ type, data }], SYSTEM_ACTOR));

/**
 * `app.deploy`: runs the app from the merged commit in a sandbox of the provider (its tree
 * exported with `git archive` becomes the sandbox's workspace, its command runs there with
 * PORT set), waits for its health path, switches the app's URL to it and destroys the
 * previous version's sandbox. A failed deploy leaves the previous one serving.
 */
export async function runAppJob(deps: AppDeps, job: AppJob): Promise<void> {
  const app = await deps.db.one<AppRow>(appQueries.get(job.project_id, job.name));
  if (!app) return;
  if (job.action === 'stop') {
    if (!app.removed) return; // re-added since
    await stopPrevious(deps, app);
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
  let handle: SandboxHandle | undefined;
  // Values the app's log may print that must not reach its error (the project's secrets).
  let secretValues: string[] = [];
  try {
    await mkdir(dir, { recursive: true });
    await deps.repos.for(project).exportTree(job.commit_sha, dir);
    const port = await freePort();
    const secrets = await sandboxSecrets(deps.db, deps.box, job.project_id);
    secretValues = Object.values(secrets.env);
    // PATH, HOME and the like come from the provider; never the server's own environment.
    const env: Record<string, string> = {
      ...secrets.env,
      ...(app.spec.env ?? {}),
      PORT: String(port),
      SVC_APP_NAME: job.name,
      SVC_COMMIT_SHA: job.commit_sha,
    };
    if (deps.enabled === false) throw new Error('apps are disabled on this server (SVC_APPS=0)');
    const provider = deps.provider;
    if (!provider) throw new Error('no sandbox provider on this worker');
    const url = `${deps.urlOf(job.name, job.project_id)}/`;
    const spec = { sandboxId: deployId, sessionId: deployId, projectId: job.project_id, accountId: project.account_id, env, labels: { 'svc.app': job.name }, app: { command: app.spec.command, workspaceDir: dir } };
    // A version that exits before it answers gets one more start, as a restart policy
    // would: a start can die of something passing on a loaded host. One that exits again
    // fails the deploy with its own log's tail.
    let problem: string | null = null;
    let target = '';
    for (let attempt = 1; attempt <= APP_STARTS; attempt++) {
      if (handle) {
        await deps.owned.stop(provider, handle);
        handle = undefined;
      }
      const h = await provider.create(spec);
      handle = h;
      deps.owned.track(provider, h);
      // process shares the host's network: the app listens on the server's loopback. bwrap
      // and docker have their own: the app is reached through its socket only. Either way
      // browsers reach it through the API at its own origin, never at a port of this host.
      const gone = async () => (await provider.inspect(h).catch(() => 'unknown')) === 'exited';
      target = isSocketUrl(h.url) ? h.url : `http://127.0.0.1:${port}`;
      problem = await waitHealthy(target, app.spec.health_path ?? '/', gone, deps.healthTimeoutMs ?? 60_000);
      if (problem !== EXITED) break;
      deps.logger.warn({ project_id: job.project_id, app: job.name, attempt }, 'app exited before it became healthy');
    }
    if (problem) throw new Error(problem);
    const h = handle!;
    // The app's URL and its deploy record switch together: a reader never sees one without the other.
    const switched = await deps.db.transaction(async (tx) => {
      const n = await tx.run(appQueries.setLive({ projectId: job.project_id, name: job.name, hash: job.manifest_hash, commit: job.commit_sha, url, sandbox: h, target }));
      await tx.run(appQueries.deployFinished(deployId, n ? 'live' : 'superseded', n ? url : null, null));
      // Recorded with the switch, not after stopping the previous version: a removal that
      // follows the switch must find AppDeployed before it in the log.
      if (n) await appendLog(tx, 'apps', job.project_id, [{ type: 'AppDeployed', data: { name: job.name, deploy_id: deployId, commit_sha: job.commit_sha, url } }], SYSTEM_ACTOR);
      return n > 0;
    });
    if (!switched) {
      // A newer manifest (or a removal) arrived while this one started: it is not the one to serve.
      await deps.owned.stop(provider, h);
      await rm(dir, { recursive: true, force: true }).catch(() => {});
      return;
    }
    if (app.sandbox?.sandboxId !== h.sandboxId) await stopPrevious(deps, app);
    deps.logger.info({ project_id: job.project_id, app: job.name, url, commit: job.commit_sha }, 'app live');
  } catch (err) {
    let message = (err instanceof Error ? err.message : String(err)).slice(0, 1000);
    if (handle && deps.provider) {
      // Why it died is in what it printed: its log's tail goes with the error, read before
      // the sandbox (and its directory) is destroyed.
      const tail = tailOf(redactLog(await sandboxLogTail({ config: { dataDir: deps.dataDir } }, handle.provider, handle.sandboxId).catch(() => ''), secretValues), APP_LOG_TAIL);
      if (tail) message = `${message}; its log ends:\n${tail}`;
      await deps.owned.stop(deps.provider, handle).catch(() => {});
    }
    await rm(dir, { recursive: true, force: true }).catch(() => {});
    await deps.db.transaction(async (tx) => {
      await tx.run(appQueries.setStatus(job.project_id, job.name, app.sandbox || app.pid ? 'live' : 'failed', message));
      await tx.run(appQueries.deployFinished(deployId, 'failed', null, message));
    });
    await log(deps, job.project_id, 'AppDeployFailed', { name: job.name, deploy_id: deployId, commit_sha: job.commit_sha, error: message });
    deps.logger.warn({ project_id: job.project_id, app: job.name, err: message }, 'app deploy failed');
  }
}

/** Destroys the sandbox (and the exported tree) of the version `app` recorded as serving. */
async function stopPrevious(deps: AppDeps, app: AppRow): Promise<void> {
  if (app.sandbox) {
    if (deps.provider && app.sandbox.provider === deps.provider.name) await deps.owned.stop(deps.provider, app.sandbox);
    else deps.logger.warn({ project_id: app.project_id, app: app.name, provider: app.sandbox.provider }, 'previous app sandbox is of another provider: not stopped');
    await rm(path.join(deps.dataDir, 'apps', app.project_id, app.name, app.sandbox.sandboxId), { recursive: true, force: true }).catch(() => {});
  } else if (app.pid) stopLegacyPid(app.pid);
}

/** `url`: the app's origin as this request's server serves it (`appOrigin`); default the one recorded at deploy. */
export function serializeApp(a: AppRow, url: string | null = a.url): App {
  return {
    name: a.name,
    status: a.removed ? 'removed' : a.status,
    commit_sha: a.commit_sha,
    url: a.url ? url : null,
    public: a.spec.public === true,
    manifest_hash: a.manifest_hash,
    deployed_at: a.deployed_at ? new Date(a.deployed_at).toISOString() : null,
    last_error: a.last_error,
  };
}
