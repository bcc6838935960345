import { z } from 'zod';
import { changeRequestEventSchemas } from '../domain/change-request/events.js';
import { SandboxActive, sessionEventSchemas } from '../domain/session/events.js';
import { time } from './common.js';

/**
 * A stream's history as the API answers it (`GET .../change-requests/:crId/events`,
 * `GET .../sessions/:sessionId/events`), and one message of the live feed. `data` is the
 * event's own payload: in a history its shape is the event type's, from the domain's catalog.
 */
export const HistoryEventSchema = z.strictObject({
  stream_position: z.number().int().min(1),
  global_position: z.number().int().min(1),
  type: z.string(),
  data: z.record(z.string(), z.unknown()),
  actor: z.string(),
  recorded_at: time,
});

/**
 * A CR's history names who acted: `actor_name` (the person's name, else their email; null
 * for a system actor) and, when their agent acted, `session_id` (the session it ran in).
 */
export const CrHistoryEventSchema = HistoryEventSchema.extend({
  actor_name: z.string().nullable(),
  session_id: z.uuid().nullable(),
});

/** One member per event type of the catalog: `type` the literal, `data` that type's schema. */
function historyOf(catalog: Record<string, z.ZodObject>, base: z.ZodObject = HistoryEventSchema) {
  const members = Object.entries(catalog).map(([type, data]) => base.extend({ type: z.literal(type), data }));
  return z.strictObject({ events: z.array(z.union(members as unknown as [z.ZodObject, z.ZodObject, ...z.ZodObject[]])) });
}

/** `GET .../change-requests/:crId/events`: the CR's history, each event's data exactly its type's. */
export const CrHistorySchema = historyOf(changeRequestEventSchemas, CrHistoryEventSchema);
/** `GET .../sessions/:sessionId/events`: the session's history; `SandboxActive` without the daemon's address and handle (the server's business). */
export const SessionHistorySchema = historyOf({ ...sessionEventSchemas, SandboxActive: SandboxActive.omit({ url: true, ref: true }) });

export const EventsFeedQuery = z.object({
  after: z
    .string()
    .regex(/^[0-9]{1,15}$/, 'must be a global_position the feed delivered (0: from the start)')
    .optional(),
  access_token: z.string().optional(),
});

/** One message of the live feed (`GET /v1/projects/:projectId/events`, WebSocket). */
export const FeedMessageSchema = z.strictObject({
  global_position: z.number().int(),
  stream_id: z.string(),
  stream_position: z.number().int(),
  type: z.string(),
  data: z.record(z.string(), z.unknown()),
  actor: z.string(),
  recorded_at: time,
});
