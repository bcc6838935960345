import { startLedgerSweep } from '../../workers/llm-ledger.js';
import type { Core, Running } from './core.js';

/** The model ledger's sweep of orphaned reservations (workers/llm-ledger.ts), with the workers. */
export function wireLlmLedger(core: Core): Running {
  const { config, logger, db, roles } = core;
  if (!roles.worker) return {};
  return startLedgerSweep({ db, logger: logger.child({ component: 'llm-ledger' }), upstreamTimeoutMs: config.SVC_LLM_UPSTREAM_TIMEOUT_MS, metrics: core.workerMetrics });
}
