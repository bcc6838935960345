import type { SandboxProvider } from '../../infra/sandbox/port.js';
import { CHECK_EVALUATE, CHECK_RUN, type ChecksDeps } from '../../services/checks/deps.js';
import { startChecksRefresher } from '../../workers/checks-refresher.js';
import { sendFailureAutomatically } from '../../services/checks/auto-send.js';
import type { SessionDeps } from '../../services/sessions/deps.js';
import { startCheckWorkers } from '../../workers/checks.js';
import { onMergedResync } from '../../workers/manifest.js';
import type { Core, Running } from './core.js';
import { wireMergeQueue } from './merge-queue.js';

/** What the API is handed to queue check runs and merge-when-green evaluations. */
export function checksEnqueue(core: Core): Pick<ChecksDeps, 'enqueueRun' | 'evaluateLater'> {
  return {
    enqueueRun: async (job) => void (await core.queue.enqueue(CHECK_RUN, job, { retryLimit: 0 })),
    evaluateLater: async (projectId, crId) => void (await core.queue.enqueue(CHECK_EVALUATE, { project_id: projectId, cr_id: crId })),
  };
}

/**
 * Checks, worker role: runs on the app provider (a host directory as the
 * workspace: process or bwrap), merge-when-green evaluated here (merges re-sync the
 * manifest like any merge), and the refresher that follows open CRs' tips.
 */
export function wireChecks(core: Core, provider: SandboxProvider | undefined, sessions?: SessionDeps): Running {
  const { config, logger, db, secrets, repos, queue, roles, crCommands: commands } = core;
  if (!roles.worker) return {};
  const deps: ChecksDeps = {
    db,
    commands,
    repos,
    logger,
    box: secrets,
    dataDir: config.dataDir,
    provider,
    enqueueRun: checksEnqueue(core).enqueueRun,
    onMerged: onMergedResync(queue),
    lockWaitMs: 60_000,
    logMaxBytes: config.SVC_CHECKS_LOG_MAX_BYTES,
  };
  // `[review] send_failures_to_agent`: a failure goes to the agent's session (auto-send.ts).
  if (sessions) deps.onFailed = (project, crId) => sendFailureAutomatically(deps, sessions, project, crId);
  const mergeQueue = wireMergeQueue(core, deps, sessions, config.SVC_CHECKS_REFRESH_MS);
  startCheckWorkers(deps, queue, config.SVC_CHECKS_CONCURRENCY);
  const refresher = startChecksRefresher(deps, config.SVC_CHECKS_REFRESH_MS, core.workerMetrics);
  logger.info({ concurrency: config.SVC_CHECKS_CONCURRENCY, refresh_ms: config.SVC_CHECKS_REFRESH_MS }, 'checks ready');
  return { stop: async () => void (await Promise.all([refresher.stop(), mergeQueue.stop?.()])) };
}
