import type { ProjectRecord } from '../../domain/project.js';
import type { SecretBox } from '../../infra/secret-box.js';
import type { SandboxProvider } from '../../infra/sandbox/port.js';
import type { CrDeps } from '../change-requests/service.js';

/** A check run's job (`check.run`): ids only; the run itself is read from the CR stream. */
export interface CheckRunJob {
  project_id: string;
  cr_id: string;
  run_id: string;
}

export const CHECK_RUN = 'check.run';
/** Merge-when-green evaluated by a worker (whose merges re-sync the manifest): `{project_id, cr_id}`. */
export const CHECK_EVALUATE = 'check.evaluate';
export const CHECK_QUEUES = [CHECK_RUN, CHECK_EVALUATE];

export interface ChecksDeps extends CrDeps {
  box: SecretBox;
  /** Where runs' exported trees live (<data dir>/checks/<run id>). */
  dataDir: string;
  /** The provider checks run on (the sessions' one); absent: runs error ("no sandbox provider"). */
  provider?: SandboxProvider | undefined;
  /** Queues a run (`check.run`, worked with SVC_CHECKS_CONCURRENCY). */
  enqueueRun: (job: CheckRunJob) => Promise<void>;
  /**
   * Set in a process that does not merge itself (the API): merge-when-green is evaluated
   * by a worker (`check.evaluate`) instead of here.
   */
  evaluateLater?: ((projectId: string, crId: string) => Promise<void>) | undefined;
  /** Largest log kept per run (SVC_CHECKS_LOG_MAX_BYTES). */
  logMaxBytes?: number;
  /** How often a running check looks for its end or its cancellation. */
  pollMs?: number;
  /** A run that ended failed or errored (the worker: `[review] send_failures_to_agent`, auto-send.ts). */
  onFailed?: ((project: ProjectRecord, crId: string) => Promise<unknown>) | undefined;
  /** A merge queue run ended: the queue of the CR's base takes its next step (the queue decides what a failure means). */
  onQueueRunDone?: ((project: ProjectRecord, baseRef: string) => Promise<unknown>) | undefined;
  /**
   * Held by the process while it runs a merge queue check (services/merge-queue/lease.ts):
   * null when another process has the run. The queue replaces a running run nobody holds.
   */
  leaseRun?: ((runId: string) => Promise<(() => Promise<void>) | null>) | undefined;
}
