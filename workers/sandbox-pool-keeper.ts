import type { SessionDeps } from '../services/sessions/deps.js';
import { createPoolKeeper } from '../services/sessions/pool.js';
import { supervise, type RunningJob, type WorkerMetrics } from './supervisor.js';

/**
 * The pool of prepared sandboxes (docs/sessions.md "Pool") kept filled: a pass every
 * second, by one worker at a time (an advisory lock taken for the pass; its name is the one
 * earlier versions took, so a rolling upgrade never has two keepers).
 */
export const POOL_KEEPER_LOCK = 'svc:sandbox-pool';

export function startSandboxPoolKeeper(deps: SessionDeps, opts: { everyMs?: number; metrics?: WorkerMetrics | undefined } = {}): RunningJob {
  const keeper = createPoolKeeper(deps);
  return supervise(
    { name: 'sandbox-pool-keeper', everyMs: opts.everyMs ?? 1000, runAtStart: false, leader: { key: POOL_KEEPER_LOCK, mode: 'perPass' }, pass: keeper.pass, stopping: keeper.stop },
    { db: deps.db, logger: deps.logger.child({ component: 'sandbox-pool' }), metrics: opts.metrics },
  );
}
