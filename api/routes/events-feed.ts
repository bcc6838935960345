import http from 'node:http';
import type net from 'node:net';
import type { Duplex } from 'node:stream';
import { Router, type Express, type RequestHandler } from 'express';
import { WebSocket, WebSocketServer } from 'ws';
import { validationError } from '../../domain/errors.js';
import type { FeedReads } from '../../services/api-services/server.js';
import type { Logger } from '../../lib/logger.js';
import type { Checkpoint, StoredEvent } from '../../infra/event-store.js';
import type { ApiDeps } from '../deps.js';
import { resolveProject } from '../project-access.js';
import { principalOf } from '../auth.js';
import { EventsFeedQuery } from '../../contracts/events.js';
import { createFeedHub, type FeedHub, type FeedSink } from '../feed-hub.js';

/**
 * `GET /v1/projects/:projectId/events` upgraded to a WebSocket: the project's events, in
 * the store's commit-safe order, from `?after=<global_position>` (default: the start).
 *
 * The upgrade request goes through the Express app like any other request, so it is
 * authenticated by the same middleware (plus `?access_token=`, since browsers cannot set
 * headers on a WebSocket), checked by the same project rules, and refused with the same
 * error bodies (401/403/404/400) as an ordinary HTTP response, before any upgrade.
 */
export interface EventsFeed {
  /** Router for `/v1/projects/:projectId/events`, mounted after `requireAuth`. */
  routes(deps: ApiDeps): Router;
  /** The HTTP server's `upgrade` listener. */
  upgradeHandler(app: Express): (req: http.IncomingMessage, socket: Duplex, head: Buffer) => void;
  /** Closes every socket (1001) and stops the shared watcher. */
  close(): Promise<void>;
}

export interface EventsFeedOptions {
  /** The event log's reads (services/api-services/server.ts `feedReads`). */
  reads: FeedReads;
  logger: Logger;
  hub?: FeedHub;
  /** Bytes queued for one client before the feed waits for it to read. */
  highWaterBytes?: number;
  /** How long a client may leave queued messages unread before it is closed with 1013. */
  stallMs?: number;
  pingMs?: number;
  /** How often open feeds' tokens are checked for revocation or expiry (ms). */
  tokenCheckMs?: number;
}

const FEED_PATH = /^\/v1\/projects\/[^/]+\/events\/?$/;
const WS_KEY = /^[+/0-9A-Za-z]{22}==$/;

/** Browsers cannot set `Authorization` on a WebSocket: the token may come as `?access_token=`. */
export const acceptAccessToken: RequestHandler = (req, _res, next) => {
  const t = req.query.access_token;
  if (req.headers.authorization === undefined && typeof t === 'string') req.headers.authorization = `Bearer ${t}`;
  next();
};

export const feedMessage = (e: StoredEvent) =>
  JSON.stringify({
    global_position: e.global_position,
    stream_id: e.stream_id,
    stream_position: e.stream_position,
    type: e.type,
    data: e.data,
    actor: e.metadata.actor,
    recorded_at: new Date(e.recorded_at).toISOString(),
  });

async function startingPoint(reads: FeedReads, after: string | undefined, projectId: string): Promise<Checkpoint> {
  // Only a position of this project's own events: another project's checkpoint is refused
  // like an unknown one (it would tell which positions other tenants hold).
  const cp = await reads.checkpointOf(after === undefined ? 0 : Number(after), projectId);
  if (!cp) {
    throw validationError(`No event of this project at global position ${after}; resume from a position the feed delivered.`, [
      { path: 'after', message: 'unknown global position' },
    ]);
  }
  return cp;
}

/**
 * Closes a refused upgrade's socket once the answer is out. The server allows half-open
 * sockets, so `end` alone would leave one open (and `server.close` waiting) for as long as
 * the client keeps its side open.
 */
function hangUp(socket: Duplex) {
  socket.end();
  setTimeout(() => socket.destroy(), 1000).unref();
}

/** A refusal written straight to a socket that never reached Express. */
function rejectRaw(socket: Duplex, status: number, body: { error: string; message: string }) {
  const json = JSON.stringify(body);
  socket.write(
    `HTTP/1.1 ${status} ${http.STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
      `Content-Length: ${Buffer.byteLength(json)}\r\nConnection: close\r\n\r\n${json}`,
  );
  hangUp(socket);
}

export function createEventsFeed(opts: EventsFeedOptions): EventsFeed {
  const { reads, logger } = opts;
  const hub = opts.hub ?? createFeedHub({ reads, logger });
  const highWater = opts.highWaterBytes ?? 1024 * 1024;
  const stallMs = opts.stallMs ?? 30_000;
  const pingMs = opts.pingMs ?? 30_000;
  const wss = new WebSocketServer({ noServer: true, maxPayload: 4096, perMessageDeflate: false, clientTracking: false });
  const sockets = new Set<WebSocket>();
  const pending = new WeakMap<http.IncomingMessage, { socket: Duplex; head: Buffer }>();
  /** Upgrade requests not yet answered or handed to ws: destroyed on close. */
  const handshaking = new Set<Duplex>();
  let closing = false;

  /**
   * A feed lives no longer than its token: one query per tick for every open socket finds
   * the tokens revoked or expired since, and their sockets are closed (1008) within
   * `tokenCheckMs` (+ the query). No sockets, no queries.
   */
  const tokenOf = new Map<WebSocket, string>();
  const tokenCheckMs = opts.tokenCheckMs ?? 250;
  let tokenTimer: NodeJS.Timeout | undefined;
  let checking = false;
  const checkTokens = async () => {
    if (checking || tokenOf.size === 0) return;
    checking = true;
    try {
      const ids = [...new Set(tokenOf.values())];
      const dead = await reads.deadTokens(ids);
      if (dead.size === 0) return;
      for (const [ws, id] of tokenOf) {
        if (!dead.has(id)) continue;
        tokenOf.delete(ws);
        ws.close(1008, 'Token revoked or expired');
        setTimeout(() => ws.terminate(), 1000).unref();
      }
    } catch (err) {
      logger.warn({ err: (err as Error).message }, 'event feed could not check its tokens');
    } finally {
      checking = false;
    }
  };
  const watchTokens = () => {
    tokenTimer ??= setInterval(() => void checkTokens(), tokenCheckMs).unref();
  };
  const stopWatchingTokens = () => {
    clearInterval(tokenTimer);
    tokenTimer = undefined;
  };

  /** Sends a page, waiting whenever the client has more than `highWater` bytes unread. */
  const sinkFor = (ws: WebSocket, giveUp: () => void): FeedSink => {
    const flushed = (sent: Promise<void>) =>
      new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          logger.info('event feed client too slow; closing');
          giveUp();
          ws.close(1013, 'Client too slow; reconnect with ?after=');
          setTimeout(() => ws.terminate(), 2000).unref();
          resolve();
        }, stallMs);
        sent.then(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    return {
      async deliver(events) {
        let sent: Promise<void> = Promise.resolve();
        for (const e of events) {
          if (ws.readyState !== WebSocket.OPEN) return;
          sent = new Promise<void>((resolve) => ws.send(feedMessage(e), () => resolve()));
          if (ws.bufferedAmount > highWater) await flushed(sent);
        }
        await flushed(sent);
      },
      fail() {
        ws.close(1011, 'Event feed unavailable');
      },
    };
  };

  const attach = (ws: WebSocket, projectId: string, from: Checkpoint, tokenId: string) => {
    if (closing) return ws.close(1001, 'Server stopping');
    sockets.add(ws);
    tokenOf.set(ws, tokenId);
    watchTokens();
    const sub = hub.subscribe(projectId, from, sinkFor(ws, () => sub.close()));
    let alive = true;
    ws.on('pong', () => (alive = true));
    const ping = setInterval(() => {
      if (!alive) return ws.terminate();
      alive = false;
      ws.ping();
    }, pingMs).unref();
    ws.on('message', () => {}); // the feed is one-way; input is ignored
    ws.on('error', (err) => logger.debug({ err: err.message }, 'event feed socket error'));
    ws.on('close', () => {
      clearInterval(ping);
      sub.close();
      sockets.delete(ws);
      tokenOf.delete(ws);
      if (sockets.size === 0) stopWatchingTokens();
    });
  };

  return {
    routes(deps) {
      const r = Router({ mergeParams: true });
      r.get('/', async (req, res) => {
        const project = await resolveProject(deps, req);
        const q = EventsFeedQuery.parse(req.query);
        const from = await startingPoint(reads, q.after, project.project_id);
        const tokenId = principalOf(req).token_id;
        const up = pending.get(req);
        if (!up) {
          res
            .status(426)
            .set({ Upgrade: 'websocket', Connection: 'Upgrade' })
            .json({ error: 'Upgrade required', message: 'This is a WebSocket endpoint: connect with Upgrade: websocket.' });
          return;
        }
        const key = req.headers['sec-websocket-key'];
        const version = req.headers['sec-websocket-version'];
        if (typeof key !== 'string' || !WS_KEY.test(key) || (version !== '13' && version !== '8')) {
          throw validationError('Not a valid WebSocket handshake (Sec-WebSocket-Key / Sec-WebSocket-Version 13).');
        }
        pending.delete(req);
        handshaking.delete(up.socket);
        res.detachSocket(up.socket as net.Socket);
        wss.handleUpgrade(req, up.socket, up.head, (ws) => attach(ws, project.project_id, from, tokenId));
      });
      return r;
    },

    upgradeHandler(app) {
      return (req, socket, head) => {
        socket.on('error', () => {}); // a client gone mid-handshake is not a server error
        handshaking.add(socket);
        socket.once('close', () => handshaking.delete(socket));
        const path = (req.url ?? '').split('?')[0] ?? '';
        if (closing) return rejectRaw(socket, 503, { error: 'Unavailable', message: 'The server is stopping.' });
        if (!FEED_PATH.test(path)) return rejectRaw(socket, 404, { error: 'Not found', message: `No WebSocket endpoint at ${path}.` });
        if (req.method !== 'GET') return rejectRaw(socket, 405, { error: 'Method not allowed', message: 'Open the feed with GET.' });
        if (req.headers['content-length'] || req.headers['transfer-encoding']) {
          return rejectRaw(socket, 400, { error: 'Bad request', message: 'A WebSocket handshake has no body.' });
        }
        if (String(req.headers.upgrade).toLowerCase() === 'websocket') pending.set(req, { socket, head });
        // An ordinary response over the raw socket: the refusals (and the 426 for other
        // upgrade protocols) are written by Express, then the connection is closed.
        const res = new http.ServerResponse(req);
        res.assignSocket(socket as net.Socket);
        res.shouldKeepAlive = false;
        res.on('finish', () => hangUp(socket));
        app(req, res);
      };
    },

    async close() {
      closing = true;
      for (const s of handshaking) s.destroy();
      const all = [...sockets];
      await Promise.all(
        all.map(
          (ws) =>
            new Promise<void>((resolve) => {
              if (ws.readyState === WebSocket.CLOSED) return resolve();
              ws.once('close', () => resolve());
              ws.close(1001, 'Server stopping');
              setTimeout(() => ws.terminate(), 2000).unref();
            }),
        ),
      );
      stopWatchingTokens();
      await hub.close();
      wss.close();
    },
  };
}
