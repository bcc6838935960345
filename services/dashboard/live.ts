import type { Executor } from '../../infra/db/db.js';
import { dashboardQueries } from '../../sql/queries/dashboard.js';

/** Where a project's live view starts: the global position of its newest event, 0 if none. */
export async function lastProjectPosition(db: Executor, projectId: string): Promise<number> {
  return (await db.one<{ global_position: number }>(dashboardQueries.lastProjectEvent(projectId)))?.global_position ?? 0;
}
