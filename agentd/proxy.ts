import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Logger } from '../lib/logger.js';
import { HttpError, sendError } from './http-util.js';
import { downstreamResponseHeaders, upstreamRequestHeaders, type ProxyTarget } from './proxy-auth.js';

/**
 * Streaming reverse proxy to 127.0.0.1:{port}, for plain HTTP and for upgrades
 * (WebSocket). Bodies are piped, never buffered: an SSE response reaches the client
 * event by event. A failed upstream is a 502; a client that goes away tears the upstream
 * request down with it.
 */
export class LoopbackProxy {
  /** Keep-alive to the upstream, Nagle off once per socket (not per request). */
  private readonly agent = new http.Agent({ keepAlive: true, maxSockets: 256, maxFreeSockets: 64, scheduling: 'lifo', noDelay: true } as http.AgentOptions);

  constructor(
    /** The daemon's control key, or a reader of it (a pool sandbox's key rotates at its claim). */
    private readonly token: string | (() => string),
    private readonly logger: Logger,
  ) {}

  private key(): string {
    return typeof this.token === 'string' ? this.token : this.token();
  }

  close(): void {
    this.agent.destroy();
  }

  forward(req: IncomingMessage, res: ServerResponse, target: ProxyTarget, setCookie: string | undefined): void {
    const upReq = http.request({
      host: '127.0.0.1',
      port: target.port,
      method: req.method,
      path: target.path,
      headers: upstreamRequestHeaders(req, this.key(), false),
      agent: this.agent,
    });
    upReq.on('response', (upRes) => {
      const headers = downstreamResponseHeaders(upRes.headers);
      if (setCookie) headers['set-cookie'] = [...toArray(headers['set-cookie']), setCookie];
      res.writeHead(upRes.statusCode ?? 502, upRes.statusMessage, headers);
      // Streams without a declared length (SSE, chunked) get their headers now, not
      // with the first chunk, which may be minutes away.
      if (upRes.headers['content-length'] === undefined) res.flushHeaders();
      // Forwarded by hand, not pipe() (seven listeners added and removed per response) or
      // stream.pipeline() (an AbortController per call): two listeners, same back-pressure
      // (the upstream pauses while the client's buffer is full), chunks sent as they come.
      upRes.on('error', () => res.destroy());
      upRes.on('data', (chunk: Buffer) => {
        if (!res.write(chunk)) {
          upRes.pause();
          res.once('drain', () => upRes.resume());
        }
      });
      upRes.on('end', () => res.end());
    });
    upReq.on('error', (err) => {
      if (!res.headersSent) {
        this.logger.debug({ port: target.port, err: err.message }, 'upstream unreachable');
        sendError(res, new HttpError(502, 'Bad gateway', `Nothing answered on port ${target.port}.`));
      } else {
        res.destroy();
      }
    });
    res.on('close', () => {
      if (!res.writableFinished) upReq.destroy();
    });
    req.on('error', () => upReq.destroy());
    const hasBody = req.headers['content-length'] !== undefined || req.headers['transfer-encoding'] !== undefined;
    if (hasBody) req.pipe(upReq);
    else upReq.end();
  }

  upgrade(req: IncomingMessage, socket: Duplex, head: Buffer, target: ProxyTarget): void {
    const upReq = http.request({
      host: '127.0.0.1',
      port: target.port,
      method: req.method,
      path: target.path,
      headers: upstreamRequestHeaders(req, this.key(), true),
      agent: false,
    });
    const fail = () => socket.destroy();
    socket.on('close', () => upReq.destroy());
    upReq.on('upgrade', (upRes, upSocket, upHead) => {
      upSocket.on('error', fail);
      socket.on('error', () => upSocket.destroy());
      upSocket.on('close', fail);
      socket.on('close', () => upSocket.destroy());
      if (socket.destroyed) {
        upSocket.destroy();
        return;
      }
      setNoDelay(socket);
      upSocket.setNoDelay(true);
      socket.write(statusLine(upRes) + rawHeaderLines(upRes.rawHeaders) + '\r\n');
      if (upHead.length) socket.write(upHead);
      if (head.length) upSocket.write(head);
      upSocket.pipe(socket);
      socket.pipe(upSocket);
    });
    upReq.on('response', (upRes) => {
      // The upstream declined the upgrade: relay its answer and close.
      socket.write(statusLine(upRes) + rawHeaderLines(upRes.rawHeaders, true) + 'connection: close\r\n\r\n');
      upRes.pipe(socket);
    });
    upReq.on('error', (err) => {
      this.logger.debug({ port: target.port, err: err.message }, 'upstream unreachable for upgrade');
      writeRawError(socket, new HttpError(502, 'Bad gateway', `Nothing answered on port ${target.port}.`));
    });
    upReq.end();
  }
}

const toArray = (v: string | string[] | undefined): string[] => (v === undefined ? [] : Array.isArray(v) ? v : [v]);

function setNoDelay(socket: Duplex): void {
  const s = socket as Duplex & { setNoDelay?: (b: boolean) => void };
  s.setNoDelay?.(true);
}

function statusLine(res: IncomingMessage): string {
  return `HTTP/1.1 ${res.statusCode ?? 502} ${res.statusMessage ?? ''}\r\n`;
}

function rawHeaderLines(raw: string[], dropFraming = false): string {
  let out = '';
  for (let i = 0; i + 1 < raw.length; i += 2) {
    const name = raw[i]!;
    if (dropFraming && /^(connection|keep-alive|transfer-encoding)$/i.test(name)) continue;
    out += `${name}: ${raw[i + 1]!}\r\n`;
  }
  return out;
}

/** An error answer on a socket that has not been handed to an HTTP response (upgrades). */
export function writeRawError(socket: Duplex, err: HttpError): void {
  if (socket.destroyed) return;
  const body = JSON.stringify({ error: err.reason, message: err.message, ...err.details });
  const reason = http.STATUS_CODES[err.status] ?? 'Error';
  socket.end(
    `HTTP/1.1 ${err.status} ${reason}\r\ncontent-type: application/json; charset=utf-8\r\n` +
      `content-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`,
  );
}
