import type { Executor } from '../../infra/db/db.js';
import { nextFire, parseCron } from '../../domain/manifest/cron.js';
import type { TriggerSpec } from '../../domain/manifest/schema.js';
import { triggerQueries, type TriggerRow } from '../../sql/queries/triggers.js';
import { appendLog, SYSTEM_ACTOR } from '../manifest/audit-log.js';

/**
 * Trigger rows follow the manifest in force: upserted from `[[triggers]]`, removed when
 * gone. `next_fire_at` is kept when the schedule and `enabled` did not change (a re-sync
 * never skips or repeats a tick), recomputed from now otherwise.
 */
export async function syncTriggers(tx: Executor, projectId: string, specs: TriggerSpec[], now: Date): Promise<void> {
  const existing = new Map((await tx.rows<TriggerRow>(triggerQueries.list(projectId))).map((t) => [t.slug, t]));
  const events: Array<{ type: string; data: Record<string, unknown> }> = [];
  for (const s of specs) {
    const old = existing.get(s.slug);
    const keep = old && old.schedule === s.schedule && old.enabled === s.enabled && old.next_fire_at;
    const next = !s.enabled ? null : keep ? old.next_fire_at : nextFire(parseCron(s.schedule), now);
    await tx.run(
      triggerQueries.upsert({ project_id: projectId, slug: s.slug, schedule: s.schedule, prompt: s.prompt, agent: s.agent ?? null, model: s.model ?? null, enabled: s.enabled, next_fire_at: next }),
    );
    if (!old) events.push({ type: 'TriggerAdded', data: { slug: s.slug, schedule: s.schedule, enabled: s.enabled } });
    else if (old.schedule !== s.schedule || old.enabled !== s.enabled || old.prompt !== s.prompt || old.agent !== (s.agent ?? null) || old.model !== (s.model ?? null)) {
      events.push({ type: 'TriggerChanged', data: { slug: s.slug, schedule: s.schedule, enabled: s.enabled } });
    }
  }
  const removed = await tx.rows<{ slug: string }>(triggerQueries.removeOthers(projectId, specs.map((s) => s.slug)));
  for (const r of removed) events.push({ type: 'TriggerRemoved', data: { slug: r.slug } });
  await appendLog(tx, 'triggers', projectId, events, SYSTEM_ACTOR);
}
