import type { ServiceWiring } from './index.js';
import type { Executor } from '../../infra/db/db.js';
import { checkpointOf, latestPosition, readAll } from '../../infra/event-store.js';
import { deadTokens } from '../tokens/service.js';
import { healthQueries } from '../../sql/queries/health.js';
import { bind } from './bind.js';

/** The events feed's reads (api/feed-hub.ts, api/routes/events-feed.ts). */
export function feedReads(db: Executor) {
  return {
    readAll: bind(db, readAll),
    latestPosition: () => latestPosition(db),
    checkpointOf: bind(db, checkpointOf),
    deadTokens: bind(db, deadTokens),
  };
}
export type FeedReads = ReturnType<typeof feedReads>;

/** `/readyz`: the database answers. */
export function healthServices(w: ServiceWiring) {
  return {
    async databaseReady(): Promise<void> {
      await w.db.one(healthQueries.ping());
    },
    queueReady: () => w.queue.ping(),
  };
}
