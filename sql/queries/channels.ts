import type { Query } from '../query.js';

export interface ChannelRow {
  channel_id: string;
  project_id: string;
  kind: 'slack';
  webhook_url_enc: string;
  webhook_hint: string;
  created_by: string;
  created_at: Date;
  checkpoint_txid: string;
  checkpoint_position: number;
  delivered_count: number;
  last_delivered_at: Date | null;
  last_error: string | null;
  last_error_at: Date | null;
}

const cols = `channel_id, project_id, kind, webhook_url_enc, webhook_hint, created_by, created_at,
  checkpoint_txid::text AS checkpoint_txid, checkpoint_position, delivered_count, last_delivered_at, last_error, last_error_at`;

export const channelQueries = {
  /** Starts at "now": every transaction below the commit-safe horizon is history. */
  insert: (c: { channelId: string; projectId: string; kind: string; webhookUrlEnc: string; webhookHint: string; createdBy: string }): Query => ({
    text: `INSERT INTO channels (channel_id, project_id, kind, webhook_url_enc, webhook_hint, created_by, checkpoint_txid, checkpoint_position)
      VALUES ($1, $2, $3, $4, $5, $6, pg_snapshot_xmin(pg_current_snapshot()), 0) RETURNING ${cols}`,
    values: [c.channelId, c.projectId, c.kind, c.webhookUrlEnc, c.webhookHint, c.createdBy],
  }),
  listForProject: (projectId: string): Query => ({
    text: `SELECT ${cols} FROM channels WHERE project_id = $1 ORDER BY created_at, channel_id`,
    values: [projectId],
  }),
  all: (): Query => ({ text: `SELECT ${cols} FROM channels ORDER BY created_at`, values: [] }),
  byId: (channelId: string): Query => ({ text: `SELECT ${cols} FROM channels WHERE channel_id = $1`, values: [channelId] }),
  remove: (projectId: string, channelId: string): Query => ({
    text: 'DELETE FROM channels WHERE project_id = $1 AND channel_id = $2 RETURNING channel_id',
    values: [projectId, channelId],
  }),
  delivered: (channelId: string, eventId: string): Query => ({
    text: 'SELECT 1 AS ok FROM channel_deliveries WHERE channel_id = $1 AND event_id = $2',
    values: [channelId, eventId],
  }),
  /** One delivery: recorded by event id and the checkpoint moved past it, in one statement. */
  recordDelivery: (channelId: string, eventId: string, txid: string, position: number): Query => ({
    text: `WITH d AS (INSERT INTO channel_deliveries (channel_id, event_id) VALUES ($1, $2) ON CONFLICT DO NOTHING RETURNING 1)
      UPDATE channels SET checkpoint_txid = $3::xid8, checkpoint_position = $4,
        delivered_count = delivered_count + (SELECT count(*) FROM d), last_delivered_at = now(), last_error = NULL, last_error_at = NULL
      WHERE channel_id = $1`,
    values: [channelId, eventId, txid, position],
  }),
  advance: (channelId: string, txid: string, position: number): Query => ({
    text: 'UPDATE channels SET checkpoint_txid = $2::xid8, checkpoint_position = $3 WHERE channel_id = $1',
    values: [channelId, txid, position],
  }),
  failed: (channelId: string, error: string): Query => ({
    text: 'UPDATE channels SET last_error = $2, last_error_at = now() WHERE channel_id = $1',
    values: [channelId, error],
  }),
  pruneDeliveries: (olderThanDays: number): Query => ({
    text: `DELETE FROM channel_deliveries WHERE delivered_at < now() - make_interval(days => $1)`,
    values: [olderThanDays],
  }),
  /** Whether nobody holds the leader lock (taken and released at once on a pooled connection). */
  crByStream: (crId: string): Query => ({
    text: 'SELECT number, title, base_ref, head_ref FROM change_requests WHERE cr_id = $1',
    values: [crId],
  }),
  projectSlug: (projectId: string): Query => ({ text: 'SELECT slug, name FROM projects WHERE project_id = $1', values: [projectId] }),
};
