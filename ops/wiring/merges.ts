import { CR_MERGE, reconcileMergeAttempts } from '../../services/change-requests/merge.js';
import { crMergeHandler } from '../../workers/cr-merge.js';
import { onMergedResync } from '../../workers/manifest.js';
import type { Core } from './core.js';

/**
 * Merges (worker role): merges a crash left published but unrecorded are recorded first,
 * then the merge worker takes jobs. Each merge holds one pool connection; one is kept for
 * the queue listener and one for the API.
 */
export async function wireMerges(core: Core, mergeConcurrency?: number): Promise<void> {
  const { config, logger, db, repos, queue, roles, crCommands: commands } = core;
  if (!roles.worker) return;
  const settled = await reconcileMergeAttempts({ db, commands, repos, logger });
  if (settled) logger.warn({ settled }, 'recorded merges published before a crash');
  const concurrency = Math.max(1, Math.min(mergeConcurrency ?? config.SVC_MERGE_CONCURRENCY, (db.pool.options.max ?? 10) - 2));
  queue.work(CR_MERGE, concurrency, crMergeHandler({ db, commands, repos, logger, lockWaitMs: 60_000, onMerged: onMergedResync(queue) }));
  logger.info({ queue: CR_MERGE, concurrency }, 'worker ready');
}
