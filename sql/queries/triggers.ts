import type { Query } from '../query.js';

const cols = 'project_id, slug, schedule, prompt, agent, model, enabled, last_fired_at, next_fire_at';

export interface TriggerRow {
  project_id: string;
  slug: string;
  schedule: string;
  prompt: string;
  agent: string | null;
  model: string | null;
  enabled: boolean;
  last_fired_at: Date | null;
  next_fire_at: Date | null;
}

export const triggerQueries = {
  list: (projectId: string): Query => ({ text: `SELECT ${cols} FROM triggers WHERE project_id = $1 ORDER BY slug`, values: [projectId] }),
  get: (projectId: string, slug: string): Query => ({
    text: `SELECT ${cols} FROM triggers WHERE project_id = $1 AND slug = $2`,
    values: [projectId, slug],
  }),
  upsert: (t: Omit<TriggerRow, 'last_fired_at'>): Query => ({
    text: `INSERT INTO triggers (project_id, slug, schedule, prompt, agent, model, enabled, next_fire_at)
      VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
      ON CONFLICT (project_id, slug) DO UPDATE SET schedule = EXCLUDED.schedule, prompt = EXCLUDED.prompt,
        agent = EXCLUDED.agent, model = EXCLUDED.model, enabled = EXCLUDED.enabled, next_fire_at = EXCLUDED.next_fire_at`,
    values: [t.project_id, t.slug, t.schedule, t.prompt, t.agent, t.model, t.enabled, t.next_fire_at],
  }),
  removeOthers: (projectId: string, keep: string[]): Query => ({
    text: 'DELETE FROM triggers WHERE project_id = $1 AND NOT (slug = ANY($2::text[])) RETURNING slug',
    values: [projectId, keep],
  }),
  due: (now: Date, limit: number): Query => ({
    text: `SELECT ${cols} FROM triggers WHERE enabled AND next_fire_at <= $1 ORDER BY next_fire_at LIMIT $2`,
    values: [now, limit],
  }),
  /** The claim: exactly one caller per (trigger, tick, kind) gets a row back. */
  claim: (projectId: string, slug: string, tick: Date, kind: 'schedule' | 'manual'): Query => ({
    text: `INSERT INTO trigger_fires (project_id, slug, tick, kind) VALUES ($1, $2, $3, $4)
      ON CONFLICT DO NOTHING RETURNING tick`,
    values: [projectId, slug, tick, kind],
  }),
  /** Moves the schedule on past `tick`, only if nobody else did (enabled rows only). */
  advance: (projectId: string, slug: string, tick: Date, next: Date | null, firedAt: Date): Query => ({
    text: `UPDATE triggers SET next_fire_at = $4, last_fired_at = $5
      WHERE project_id = $1 AND slug = $2 AND next_fire_at = $3 AND enabled`,
    values: [projectId, slug, tick, next, firedAt],
  }),
  firedManually: (projectId: string, slug: string, at: Date): Query => ({
    text: 'UPDATE triggers SET last_fired_at = $3 WHERE project_id = $1 AND slug = $2',
    values: [projectId, slug, at],
  }),
  settle: (projectId: string, slug: string, tick: Date, kind: string, outcome: string, sessionId: string | null): Query => ({
    text: 'UPDATE trigger_fires SET outcome = $5, session_id = $6 WHERE project_id = $1 AND slug = $2 AND tick = $3 AND kind = $4',
    values: [projectId, slug, tick, kind, outcome, sessionId],
  }),
  fires: (projectId: string, slug: string, limit: number): Query => ({
    text: `SELECT tick, kind, outcome, session_id, fired_at FROM trigger_fires WHERE project_id = $1 AND slug = $2
      ORDER BY fired_at DESC LIMIT $3`,
    values: [projectId, slug, limit],
  }),
};
