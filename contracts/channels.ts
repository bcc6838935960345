import { z } from 'zod';
import { time, uuid } from './common.js';

/** Chat channels of a project (`/v1/projects/:projectId/channels`, `svc channels`). */

export const CHANNEL_KINDS = ['slack'] as const;
export type ChannelKind = (typeof CHANNEL_KINDS)[number];

export const AddChannelBody = z.strictObject({
  kind: z.enum(CHANNEL_KINDS),
  webhook_url: z.string().min(1).max(2000),
});

/** The webhook URL is write-only: `webhook` shows its origin. */
export const ChannelSchema = z.strictObject({
  channel_id: uuid,
  project_id: uuid,
  kind: z.enum(CHANNEL_KINDS),
  webhook: z.string(),
  created_by: uuid,
  created_at: time,
  delivered_count: z.number().int().min(0),
  last_delivered_at: time.nullable(),
  last_error: z.string().nullable(),
  last_error_at: time.nullable(),
});
export type Channel = z.infer<typeof ChannelSchema>;

export const OneChannel = z.strictObject({ channel: ChannelSchema });
export const ChannelList = z.strictObject({ channels: z.array(ChannelSchema) });
