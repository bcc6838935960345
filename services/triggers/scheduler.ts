import type { ProjectRecord } from '../../domain/project.js';
import { nextFire, parseCron } from '../../domain/manifest/cron.js';
import { projectQueries } from '../../sql/queries/projects.js';
import { triggerQueries, type TriggerRow } from '../../sql/queries/triggers.js';
import { fireScheduled, type TriggerDeps } from './service.js';
import { nowOf } from '../../lib/clock.js';

/**
 * Fires due triggers, exactly once per tick across any number of worker processes: a
 * trigger is due when `next_fire_at <= now`; the tick is that `next_fire_at`, and the
 * process whose insert of the (trigger, tick) row succeeds owns the fire. It then moves
 * `next_fire_at` to the first tick after now (ticks missed while no worker ran are not
 * replayed: one fire, not a burst). Cron is read in the server's time zone (TZ). One pass;
 * workers/trigger-scheduler.ts runs it every SVC_SCHEDULER_INTERVAL_MS. Returns the fires
 * this process won.
 */
export async function fireDueTriggers(deps: TriggerDeps, now: Date = nowOf(deps)): Promise<Array<{ slug: string; tick: Date; outcome: string }>> {
  const won: Array<{ slug: string; tick: Date; outcome: string }> = [];
  const due = await deps.db.rows<TriggerRow>(triggerQueries.due(now, 100));
  for (const t of due) {
    const at = new Date(t.next_fire_at!);
    let next: Date | null = null;
    try {
      next = nextFire(parseCron(t.schedule), now);
    } catch {
      next = null; // a schedule that stopped parsing never fires again until the manifest fixes it
    }
    // Claim and advance commit together: a worker dying in between leaves the tick unclaimed.
    const claimed = await deps.db.transaction(async (tx) => {
      const rows = await tx.rows(triggerQueries.claim(t.project_id, t.slug, at, 'schedule'));
      if (rows.length === 0) return false;
      await tx.run(triggerQueries.advance(t.project_id, t.slug, at, next, now));
      return true;
    });
    if (!claimed) {
      deps.logger.debug({ project_id: t.project_id, trigger: t.slug, tick: at.toISOString() }, 'trigger tick already fired by another worker');
      continue;
    }
    const project = await deps.db.one<ProjectRecord>(projectQueries.byId(t.project_id));
    if (!project) continue;
    const out = await fireScheduled(deps, project, t, at);
    deps.logger.info({ project_id: t.project_id, trigger: t.slug, tick: at.toISOString(), outcome: out.outcome, pid: process.pid }, 'trigger fired');
    won.push({ slug: t.slug, tick: at, outcome: out.outcome });
  }
  return won;
}
