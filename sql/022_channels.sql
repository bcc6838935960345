-- Chat channels of a project (`svc channels`): an incoming-webhook URL (sealed with the
-- server key) and where the channel's subscriber stands in the event log. Deliveries are
-- recorded by event id, so an event is posted to a channel once even if the checkpoint
-- lags behind a delivery (a crash between the post and the checkpoint).
CREATE TABLE channels (
  channel_id          uuid PRIMARY KEY,
  project_id          uuid NOT NULL REFERENCES projects (project_id) ON DELETE CASCADE,
  kind                text NOT NULL CHECK (kind IN ('slack')),
  webhook_url_enc     text NOT NULL,
  webhook_hint        text NOT NULL,
  created_by          uuid NOT NULL,
  created_at          timestamptz NOT NULL DEFAULT now(),
  checkpoint_txid     xid8 NOT NULL,
  checkpoint_position bigint NOT NULL DEFAULT 0,
  delivered_count     bigint NOT NULL DEFAULT 0,
  last_delivered_at   timestamptz,
  last_error          text,
  last_error_at       timestamptz
);
CREATE INDEX channels_project ON channels (project_id, created_at);

CREATE TABLE channel_deliveries (
  channel_id   uuid NOT NULL REFERENCES channels (channel_id) ON DELETE CASCADE,
  event_id     uuid NOT NULL,
  delivered_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (channel_id, event_id)
);
