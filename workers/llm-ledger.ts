import type { Db } from '../infra/db/db.js';
import type { Logger } from '../lib/logger.js';
import { expireOrphans } from '../services/llm/ledger.js';
import { supervise, type RunningJob, type WorkerMetrics } from './supervisor.js';
import { nowOf } from '../lib/clock.js';

/**
 * The model ledger's sweep: reservations a process left when it died (its calls never
 * settled) expire once past the upstream timeout, charged in full, and their session's
 * calls in flight count down. Every worker runs it: the statement is one conditional
 * DELETE, so two workers sweeping together charge each reservation once.
 */
export function startLedgerSweep(
  deps: { db: Db; logger: Logger; upstreamTimeoutMs: number; metrics?: WorkerMetrics | undefined },
  opts: { now?: () => Date } = {},
): RunningJob {
  const everyMs = Math.max(100, Math.min(60_000, Math.floor(deps.upstreamTimeoutMs / 4)));
  return supervise(
    {
      name: 'llm-ledger-sweep',
      everyMs,
      pass: async () => {
        const expired = await expireOrphans(deps.db, nowOf(opts));
        if (expired) deps.logger.warn({ expired }, 'model reservations expired (their process died mid-call): charged in full');
      },
    },
    { logger: deps.logger, metrics: deps.metrics },
  );
}
