import type pg from 'pg';
import type { Db } from '../infra/db/db.js';
import type { Logger } from '../infra/logger.js';
import { checkpointAfter, readAll, type Checkpoint, type StoredEvent } from '../infra/event-store.js';

/**
 * The live feed's database side: one LISTEN connection per process (not one per socket),
 * fanning `svc_events` notifications (payload: project id, sent by the trigger of
 * sql/005_event_notify.sql) out to per-subscriber cursors. Each cursor reads the store's
 * commit-safe global read filtered by project, so an event whose transaction commits late
 * is still delivered, in (transaction, position) order. A slow poll covers anything a
 * notification did not announce (a lost listener connection, a reader held back by an
 * older transaction that was still running).
 */
export const EVENTS_CHANNEL = 'svc_events';

export interface FeedSink {
  /** Hands one page to the client; resolves when it may have the next (back-pressure). */
  deliver(events: StoredEvent[]): Promise<void>;
  /** The cursor cannot read (database gone): the subscription is over. */
  fail(err: Error): void;
}

export interface FeedSubscription {
  close(): void;
}

export interface FeedHub {
  subscribe(projectId: string, from: Checkpoint, sink: FeedSink): FeedSubscription;
  /** Stops the listener and every cursor; sinks are not called again. */
  close(): Promise<void>;
}

export interface FeedHubOptions {
  db: Db;
  logger: Logger;
  /** Safety-net poll (ms). */
  pollMs?: number;
  pageSize?: number;
}

/**
 * After a notification, the announced events can still be invisible for a moment (an
 * older transaction is running). Re-read a few times, backing off, before leaving it to
 * the poll.
 */
const LAG_RETRIES_MS = [10, 25, 50, 100, 200, 400, 800];

interface Cursor {
  projectId: string;
  at: Checkpoint;
  sink: FeedSink;
  running: boolean;
  again: boolean;
  closed: boolean;
  lagStep: number;
  lagTimer?: NodeJS.Timeout | undefined;
}

export function createFeedHub(opts: FeedHubOptions): FeedHub {
  const { db, logger } = opts;
  const pollMs = opts.pollMs ?? 5000;
  const pageSize = opts.pageSize ?? 200;
  const byProject = new Map<string, Set<Cursor>>();
  let listener: pg.PoolClient | undefined;
  let connecting: Promise<void> | undefined;
  let poll: NodeJS.Timeout | undefined;
  let closed = false;

  const all = () => [...byProject.values()].flatMap((s) => [...s]);

  /** Reads and delivers until the cursor is caught up. One read in flight per cursor. */
  const pump = async (c: Cursor, announced: boolean): Promise<void> => {
    if (c.closed) return;
    if (c.running) {
      c.again = true;
      return;
    }
    c.running = true;
    let delivered = false;
    try {
      do {
        c.again = false;
        for (;;) {
          const page = await readAll(db, c.at, { projectId: c.projectId, limit: pageSize });
          if (c.closed || page.length === 0) break;
          c.at = checkpointAfter(page[page.length - 1]!);
          delivered = true;
          await c.sink.deliver(page);
          if (c.closed || page.length < pageSize) break;
        }
      } while (c.again && !c.closed);
    } catch (err) {
      if (!c.closed) {
        logger.warn({ err: (err as Error).message, project_id: c.projectId }, 'event feed read failed');
        detach(c);
        c.sink.fail(err as Error);
      }
      return;
    } finally {
      c.running = false;
    }
    if (delivered) c.lagStep = 0;
    else if (announced && !c.closed && c.lagStep < LAG_RETRIES_MS.length) {
      clearTimeout(c.lagTimer);
      c.lagTimer = setTimeout(() => void pump(c, true), LAG_RETRIES_MS[c.lagStep++]);
    }
  };

  const wakeProject = (projectId: string) => {
    for (const c of byProject.get(projectId) ?? []) {
      c.lagStep = 0;
      void pump(c, true);
    }
  };

  const listen = (): Promise<void> =>
    (connecting ??= (async () => {
      try {
        const conn = await db.connect();
        if (closed) {
          conn.release();
          return;
        }
        conn.on('notification', (msg) => {
          if (msg.channel === EVENTS_CHANNEL && msg.payload) wakeProject(msg.payload);
        });
        conn.on('error', (err) => {
          // The poll keeps feeds moving; listen again on the next subscribe or poll tick.
          logger.warn({ err: err.message }, 'event feed listener connection failed');
          if (listener === conn) listener = undefined;
          conn.release(err);
        });
        await conn.query(`LISTEN ${EVENTS_CHANNEL}`);
        listener = conn;
        // Anything committed while we were not listening.
        for (const c of all()) void pump(c, false);
      } catch (err) {
        logger.warn({ err: (err as Error).message }, 'event feed could not LISTEN; polling only');
      } finally {
        connecting = undefined;
      }
    })());

  const detach = (c: Cursor) => {
    c.closed = true;
    clearTimeout(c.lagTimer);
    const set = byProject.get(c.projectId);
    set?.delete(c);
    if (set?.size === 0) byProject.delete(c.projectId);
  };

  return {
    subscribe(projectId, from, sink) {
      if (closed) throw new Error('event feed is closed');
      const c: Cursor = { projectId, at: from, sink, running: false, again: false, closed: false, lagStep: 0 };
      let set = byProject.get(projectId);
      if (!set) byProject.set(projectId, (set = new Set()));
      set.add(c);
      if (!listener) void listen();
      poll ??= setInterval(() => {
        if (!listener) void listen();
        for (const cur of all()) void pump(cur, false);
      }, pollMs).unref();
      void pump(c, false);
      return { close: () => detach(c) };
    },

    async close() {
      closed = true;
      clearInterval(poll);
      for (const c of all()) detach(c);
      await connecting;
      if (listener) {
        const conn = listener;
        listener = undefined;
        await conn.query(`UNLISTEN ${EVENTS_CHANNEL}`).catch(() => {});
        conn.release();
      }
    },
  };
}
