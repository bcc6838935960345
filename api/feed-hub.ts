import type { FeedReads } from '../services/api-services/server.js';
import type { Logger } from '../lib/logger.js';
import { checkpointAfter, type Checkpoint, type StoredEvent } from '../infra/event-store.js';

/**
 * The live feed's database side. One watcher per process (not one per socket) reads the
 * events sequence's last value and the commit-safe read's horizon every `watchMs` while
 * at least one feed is connected, and wakes the cursors when either moved. (A NOTIFY per append would do the same, but NOTIFY
 * serialises every committing writer on a cluster-wide lock: it cost a third of append
 * throughput, paid by every write for a feature that is idle most of the time.) Each
 * cursor reads the store's commit-safe global read filtered by project, so an event whose
 * transaction commits late is still delivered, in (transaction, position) order. A slow
 * poll covers a reader held back by an older transaction that was still running.
 */

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
  /** Stops the watcher and every cursor; sinks are not called again. */
  close(): Promise<void>;
}

export interface FeedHubOptions {
  /** The event log's reads (services/api-services/server.ts `feedReads`). */
  reads: FeedReads;
  logger: Logger;
  /** Safety-net poll (ms). */
  pollMs?: number;
  /** How often the watcher looks for new events while feeds are connected (ms). */
  watchMs?: number;
  pageSize?: number;
}

/**
 * After the watcher saw the sequence move, the new events can still be invisible for a moment (an
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
  /** A wake that arrived mid-read: the re-read owes it the lag retries. */
  againAnnounced: boolean;
  closed: boolean;
  lagStep: number;
  lagTimer?: NodeJS.Timeout | undefined;
}

export function createFeedHub(opts: FeedHubOptions): FeedHub {
  const { reads, logger } = opts;
  const pollMs = opts.pollMs ?? 5000;
  const watchMs = opts.watchMs ?? 100;
  const pageSize = opts.pageSize ?? 200;
  const byProject = new Map<string, Set<Cursor>>();
  let poll: NodeJS.Timeout | undefined;
  let watch: NodeJS.Timeout | undefined;
  let lastSeen: string | undefined;
  let watching = false;
  let closed = false;

  const all = () => [...byProject.values()].flatMap((s) => [...s]);

  /** Reads and delivers until the cursor is caught up. One read in flight per cursor. */
  const pump = async (c: Cursor, announced: boolean): Promise<void> => {
    if (c.closed) return;
    if (c.running) {
      c.again = true;
      c.againAnnounced ||= announced;
      return;
    }
    c.running = true;
    let delivered = false;
    try {
      do {
        c.again = false;
        for (;;) {
          const page = await reads.readAll(c.at, { projectId: c.projectId, limit: pageSize });
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
    const owed = announced || c.againAnnounced;
    c.againAnnounced = false;
    if (delivered) c.lagStep = 0;
    else if (owed && !c.closed && c.lagStep < LAG_RETRIES_MS.length) {
      clearTimeout(c.lagTimer);
      c.lagTimer = setTimeout(() => void pump(c, true), LAG_RETRIES_MS[c.lagStep++]);
    }
  };

  /** One cheap read of the sequence per tick, whatever the number of sockets. */
  const tick = async () => {
    if (watching || byProject.size === 0) return;
    watching = true;
    try {
      const row = await reads.latestPosition();
      const latest = `${row?.position ?? 0}/${row?.horizon ?? ''}`;
      // The first tick wakes too: an append may have landed between subscribe and now.
      if (latest !== lastSeen) {
        for (const c of all()) {
          c.lagStep = 0;
          void pump(c, true);
        }
      }
      lastSeen = latest;
    } catch (err) {
      logger.warn({ err: (err as Error).message }, 'event feed watcher could not read; the poll keeps feeds moving');
    } finally {
      watching = false;
    }
  };

  const detach = (c: Cursor) => {
    c.closed = true;
    clearTimeout(c.lagTimer);
    const set = byProject.get(c.projectId);
    set?.delete(c);
    if (set?.size === 0) byProject.delete(c.projectId);
    if (byProject.size === 0) {
      // Nobody is watching: no queries at all until the next subscriber.
      clearInterval(watch);
      clearInterval(poll);
      watch = poll = lastSeen = undefined;
    }
  };

  return {
    subscribe(projectId, from, sink) {
      if (closed) throw new Error('event feed is closed');
      const c: Cursor = { projectId, at: from, sink, running: false, again: false, againAnnounced: false, closed: false, lagStep: 0 };
      let set = byProject.get(projectId);
      if (!set) byProject.set(projectId, (set = new Set()));
      set.add(c);
      if (!watch) {
        void tick();
        watch = setInterval(() => void tick(), watchMs).unref();
      }
      poll ??= setInterval(() => {
        for (const cur of all()) void pump(cur, false);
      }, pollMs).unref();
      void pump(c, false);
      return { close: () => detach(c) };
    },

    async close() {
      closed = true;
      for (const c of all()) detach(c);
      clearInterval(watch);
      clearInterval(poll);
    },
  };
}
