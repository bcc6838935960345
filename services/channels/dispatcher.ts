import type { Db } from '../../infra/db/db.js';
import type { Logger } from '../../lib/logger.js';
import type { SecretBox } from '../../infra/secret-box.js';
import { checkpointAfter, readAll, type Checkpoint, type StoredEvent } from '../../infra/event-store.js';
import { eventQueries } from '../../sql/queries/events.js';
import { channelQueries as q, type ChannelRow } from '../../sql/queries/channels.js';
import { CHANNEL_EVENT_TYPES, formatEvent } from './messages.js';
import { checkWebhookUrl } from './service.js';
import { postPinned, type OutboundPolicy } from '../../infra/net/outbound-policy.js';
import { exponential } from '../../lib/backoff.js';

/**
 * The channels subscriber: an asynchronous reader of the event log that posts CR
 * opened/merged/closed, session running/failed and budget crossings (80%, 100%) to each
 * channel's webhook. Commands never wait for it. Delivery is at-least-once: a channel's
 * checkpoint moves past an event only once the webhook accepted it, and every delivery is
 * recorded by event id, so a re-read after a crash does not post it twice. A failing webhook is retried with
 * exponential backoff (capped) and holds back only its own channel, in order.
 *
 * This is one pass and the state passes share; its loop, and the election of the one
 * process that delivers, are workers/channel-dispatcher.ts.
 */
export interface ChannelDispatcherOptions {
  db: Db;
  secrets: SecretBox;
  logger: Logger;
  publicUrl?: string;
  /** First retry delay (ms); doubles per failure up to `maxBackoffMs`. */
  baseBackoffMs?: number;
  maxBackoffMs?: number;
  /** Per-request timeout (ms). */
  timeoutMs?: number;
  /** The outbound URL policy, applied again to every delivery (its resolver is injectable). */
  policy: OutboundPolicy;
  /** http:// webhooks (SVC_CHANNELS_ALLOW_HTTP). */
  allowHttp: boolean;
}

export interface ChannelDispatch {
  /** One pass: every channel's pending events, as far as its webhook accepts them. */
  pass(): Promise<void>;
  /** Ends the pass in flight at its next event. */
  stop(): void;
}

interface Retry {
  failures: number;
  nextAt: number;
}

export function createChannelDispatch(opts: ChannelDispatcherOptions): ChannelDispatch {
  const { db, logger, secrets } = opts;
  const baseBackoff = opts.baseBackoffMs ?? 500;
  const maxBackoff = opts.maxBackoffMs ?? 5 * 60_000;
  const timeoutMs = opts.timeoutMs ?? 10_000;
  const retries = new Map<string, Retry>();
  let lastSeen = '';
  let caughtUp = false;
  let stopped = false;
  let lastPrune = -Infinity;

  /**
   * Every delivery checks the URL again (a name that resolves to a local address now is
   * refused: DNS rebinding) and connects to the address it checked. Redirects are failures.
   */
  const post = async (url: string, eventId: string, body: object): Promise<void> => {
    let target;
    try {
      target = await checkWebhookUrl(url, opts.policy, opts.allowHttp, true);
    } catch (err) {
      throw new Error(`refused by the URL policy: ${(err as Error).message}`);
    }
    const res = await postPinned(target, JSON.stringify(body), { 'content-type': 'application/json', 'x-svc-event-id': eventId, 'user-agent': 'svc-channels' }, timeoutMs);
    if (res.status < 200 || res.status > 299) throw new Error(`webhook answered ${res.status}`);
  };

  /** Delivers one channel's pending events in order; stops at the first failure. */
  const pump = async (c: ChannelRow): Promise<void> => {
    const retry = retries.get(c.channel_id);
    if (retry && performance.now() < retry.nextAt) return;
    let at: Checkpoint = { txid: c.checkpoint_txid, position: Number(c.checkpoint_position) };
    let url: string | undefined;
    for (;;) {
      const page: StoredEvent[] = await readAll(db, at, { projectId: c.project_id, limit: 100 });
      if (page.length === 0) return;
      let skipped: Checkpoint | undefined;
      for (const e of page) {
        if (stopped) break;
        const next = checkpointAfter(e);
        if (!CHANNEL_EVENT_TYPES.has(e.type) || (await db.one(q.delivered(c.channel_id, e.event_id)))) {
          skipped = at = next;
          continue;
        }
        const message = await formatEvent(db, e, opts.publicUrl);
        if (!message) {
          skipped = at = next;
          continue;
        }
        url ??= secrets.open(c.webhook_url_enc);
        try {
          await post(url, e.event_id, message);
        } catch (err) {
          if (skipped) await db.run(q.advance(c.channel_id, skipped.txid, skipped.position));
          const failures = (retry?.failures ?? 0) + 1;
          const delay = exponential(baseBackoff, failures - 1, maxBackoff);
          retries.set(c.channel_id, { failures, nextAt: performance.now() + delay });
          const reason = (err as Error).name === 'TimeoutError' ? `no answer in ${timeoutMs} ms` : (err as Error).message;
          await db.run(q.failed(c.channel_id, reason));
          logger.warn({ channel_id: c.channel_id, event_id: e.event_id, failures, retry_in_ms: delay, err: reason }, 'channels: delivery failed; will retry');
          return;
        }
        retries.delete(c.channel_id);
        await db.run(q.recordDelivery(c.channel_id, e.event_id, next.txid, next.position));
        skipped = undefined;
        at = next;
      }
      if (skipped) await db.run(q.advance(c.channel_id, skipped.txid, skipped.position));
      if (stopped || page.length < 100) return;
    }
  };

  const pass = async () => {
    // Nothing appended, no horizon move, no retry due: no reads at all.
    const row = await db.one<{ position: number; horizon: string }>(eventQueries.latestPosition());
    const latest = `${row?.position ?? 0}/${row?.horizon ?? ''}`;
    const retryDue = [...retries.values()].some((r) => performance.now() >= r.nextAt);
    if (latest === lastSeen && caughtUp && !retryDue) return;
    lastSeen = latest;
    const channels = await db.rows<ChannelRow>(q.all());
    for (const id of retries.keys()) if (!channels.some((c) => c.channel_id === id)) retries.delete(id);
    for (const c of channels) {
      if (stopped) return;
      try {
        await pump(c);
      } catch (err) {
        logger.warn({ channel_id: c.channel_id, err: (err as Error).message }, 'channels: could not read for a channel');
      }
    }
    // A channel added since the last pass starts at "now", so no event is missed by skipping a quiet pass.
    caughtUp = retries.size === 0;
    if (performance.now() - lastPrune > 3600_000) {
      lastPrune = performance.now();
      await db.run(q.pruneDeliveries(7)).catch(() => {});
    }
  };

  return {
    pass,
    stop() {
      stopped = true;
    },
  };
}
