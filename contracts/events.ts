import { z } from 'zod';
import { time } from './common.js';

/**
 * A stream's history as the API answers it (`GET .../change-requests/:crId/events`,
 * `GET .../sessions/:sessionId/events`), and one message of the live feed. `data` is the
 * event's own payload: its shape is the event type's, in the domain's catalog.
 */
export const HistoryEventSchema = z.strictObject({
  stream_position: z.number().int().min(1),
  global_position: z.number().int().min(1),
  type: z.string(),
  data: z.record(z.string(), z.unknown()),
  actor: z.string(),
  recorded_at: time,
});
export type HistoryEvent = z.infer<typeof HistoryEventSchema>;
export const HistorySchema = z.strictObject({ events: z.array(HistoryEventSchema) });

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
export type FeedMessage = z.infer<typeof FeedMessageSchema>;
