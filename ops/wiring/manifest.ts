import { resumeApps } from '../../services/apps/resume.js';
import { OwnedApps } from '../../services/apps/runner.js';
import { appOrigin } from '../../services/apps/origin.js';
import { APP_DEPLOY } from '../../services/apps/sync.js';
import { enqueueAllManifestSyncs, type ManifestDeps } from '../../services/manifest/sync.js';
import type { SandboxProvider } from '../../infra/sandbox/port.js';
import type { SessionDeps } from '../../services/sessions/deps.js';
import { createSession } from '../../services/sessions/service.js';
import { startTriggerScheduler } from '../../workers/trigger-scheduler.js';
import type { RunningJob } from '../../workers/supervisor.js';
import type { SpawnSession } from '../../services/triggers/service.js';
import { MANIFEST_SYNC, appDeployHandler, manifestSyncHandler } from '../../workers/manifest.js';
import type { Core, Running } from './core.js';

export interface ManifestWiring extends Running {
  /** How triggers (and the API's fire route) spawn sessions. */
  spawnSession: SpawnSession;
  scheduler: RunningJob | undefined;
}

/**
 * The manifest, triggers and apps. Worker role: manifest syncs and app deploys
 * from the queue, a sync of every project queued at start, apps resumed, and (SVC_SCHEDULER)
 * the trigger scheduler. Triggers spawn sessions the same way as an interactive create.
 */
export async function wireManifest(core: Core, sessions: SessionDeps, appProvider: SandboxProvider | undefined): Promise<ManifestWiring> {
  const { config, logger, db, secrets, repos, queue, roles } = core;
  const manifestDeps: ManifestDeps = { db, repos, logger, enqueueApp: async (job) => void (await queue.enqueue(APP_DEPLOY, job)) };
  const spawnSession: SpawnSession = async (input) => ({ ...(await createSession(sessions, input)) });
  let scheduler: RunningJob | undefined;
  const owned = new OwnedApps();
  if (roles.worker) {
    queue.work(MANIFEST_SYNC, 2, manifestSyncHandler(manifestDeps));
    queue.work(APP_DEPLOY, 1, appDeployHandler({ db, repos, logger, box: secrets, dataDir: config.dataDir, owned, ...(appProvider ? { provider: appProvider } : {}), urlOf: (name: string, projectId: string) => appOrigin(config, name, projectId, config.PORT), healthTimeoutMs: config.SVC_APP_HEALTH_TIMEOUT_MS, enabled: config.SVC_APPS }));
    const synced = await enqueueAllManifestSyncs(db, async (project_id) => void (await queue.enqueue(MANIFEST_SYNC, { project_id, reason: 'start' })));
    await resumeApps(db, appProvider, manifestDeps.enqueueApp);
    if (config.SVC_SCHEDULER) {
      scheduler = startTriggerScheduler({ db, repos, logger, spawnSession }, config.SVC_SCHEDULER_INTERVAL_MS, core.workerMetrics);
    }
    logger.info({ projects: synced }, 'manifest syncs queued at start');
  }
  return {
    spawnSession,
    scheduler,
    stop: async () => scheduler?.stop(),
    close: async () => void (await owned.stopAll()),
  };
}
