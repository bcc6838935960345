import { z } from 'zod';
import type { JobOutput, Queue } from '../infra/queue.js';
import type { SessionDeps } from '../services/sessions/deps.js';
import { SESSION_IDLE_SWEEP, SESSION_PROVISION, SESSION_STOP } from '../services/sessions/jobs.js';
import { provisionSession, recoverSessions, stopSandbox, sweepIdle } from '../services/sessions/provision.js';
import { sweepOrphans } from '../services/sessions/orphans.js';
import { startSessionIdleSweep } from './session-idle-sweep.js';
import { startSandboxPoolKeeper } from './sandbox-pool-keeper.js';
import type { WorkerMetrics } from './supervisor.js';

export { SESSION_QUEUES } from '../services/sessions/jobs.js';

const provisionJob = z.object({ session_id: z.uuid() });
const stopJob = z.object({
  session_id: z.uuid(),
  sandbox: z.object({
    sandboxId: z.uuid(),
    provider: z.enum(['process', 'bwrap', 'docker', 'kubernetes']),
    url: z.string(),
    ref: z.string(),
  }),
});

/**
 * The session workers: `session.provision`, `session.stop` and `session.idle-sweep`
 * (scheduled by ./session-idle-sweep.ts), and the sandbox pool's keeper
 * (./sandbox-pool-keeper.ts). At start, sessions a crashed process left provisioning get their job
 * again, running ones whose sandbox is gone (or on another provider) are marked stopped,
 * and every loadable provider's sandboxes without a live row are removed (orphans.ts);
 * the sweep repeats both.
 */
export async function startSessionWorkers(deps: SessionDeps, queue: Queue, opts: { concurrency?: number; metrics?: WorkerMetrics | undefined } = {}): Promise<{ stop(): Promise<void> }> {
  const concurrency = opts.concurrency ?? 4;
  queue.work(SESSION_PROVISION, concurrency, async (data): Promise<JobOutput> => {
    const job = provisionJob.parse(data);
    return { ok: true, value: await provisionSession(deps, job.session_id) };
  });
  queue.work(SESSION_STOP, concurrency, async (data): Promise<JobOutput> => {
    await stopSandbox(deps, stopJob.parse(data));
    return { ok: true, value: 'stopped' };
  });
  queue.work(SESSION_IDLE_SWEEP, 1, async (): Promise<JobOutput> => {
    const stopped = await sweepIdle(deps);
    // A provisioning session whose job was lost (a crash) gets it again; the job is a no-op
    // for a session another worker is provisioning (it holds the session's lock).
    await recoverSessions(deps, { enqueue: (id) => queue.enqueue(SESSION_PROVISION, { session_id: id }).then(() => undefined) });
    // Sandboxes no row means to run (an earlier provider's, a crash's): removed by their own provider.
    await sweepOrphans(deps);
    return { ok: true, value: { stopped } };
  });
  const recovered = await recoverSessions(deps, { enqueue: (id) => queue.enqueue(SESSION_PROVISION, { session_id: id }).then(() => undefined) });
  if (recovered.provisioning || recovered.lost || recovered.attached) deps.logger.info(recovered, 'sessions recovered at start');
  await sweepOrphans(deps)
    .then((swept) => deps.logger.info({ providers: swept.providers }, 'orphan sweep at start: every loadable provider listed'))
    .catch((err: Error) => deps.logger.warn({ err: err.message }, 'orphan sweep at start failed; the next sweep retries'));
  const sweep = startSessionIdleSweep(deps, queue, opts.metrics);
  // The pool of prepared sandboxes (docs/sessions.md "Pool"): kept filled from here.
  const pool = startSandboxPoolKeeper(deps, { metrics: opts.metrics });
  return {
    async stop() {
      await Promise.all([sweep.stop(), pool.stop()]);
    },
  };
}
