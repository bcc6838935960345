import type { Db } from '../../infra/db/db.js';
import { createCommandPath, type CommandPath } from '../../infra/event-sourcing/pg-store.js';
import { crRows } from '../../projections/change-requests.js';

export { GROUP_IN_FLIGHT } from '../../infra/event-sourcing/pg-store.js';

/**
 * The CR command path of one process over one pool (group commit of appends, grouped
 * reads, cached rows), as the command handler's store uses it. Made once by the server's
 * wiring and passed in (`CrDeps.commands`); a second server process has its own (tests
 * build one per `Db` they act as).
 */
export type CrCommandPath = CommandPath;

export function createCrCommandPath(db: Db, opts: { maxCachedRows?: number; inFlight?: number } = {}): CrCommandPath {
  return createCommandPath(db, crRows, opts);
}
