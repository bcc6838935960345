import type { RepoMaintainer } from '../infra/git/maintenance.js';
import type { Logger } from '../lib/logger.js';
import { supervise, type RunningJob, type WorkerMetrics } from './supervisor.js';

/**
 * Maintenance of the repositories this process keeps (infra/git/maintenance.ts): every
 * `everyMs` (default a minute) each repository is looked at and packed where a pass is due.
 * Every worker runs it over its own directories; git's maintenance is safe beside reads,
 * pushes and merges, and a pass joins one in flight on the same repository.
 */
export function startRepositoryMaintenance(maintainer: RepoMaintainer, opts: { everyMs?: number; logger: Logger; metrics?: WorkerMetrics | undefined }): RunningJob {
  const job = supervise(
    { name: 'repository-maintenance', everyMs: opts.everyMs ?? 60_000, runAtStart: false, pass: () => maintainer.tick() },
    { logger: opts.logger, metrics: opts.metrics },
  );
  return {
    tick: job.tick,
    async stop() {
      await job.stop();
      await maintainer.drain(); // a pass asked for outside the loop ends too
    },
  };
}
