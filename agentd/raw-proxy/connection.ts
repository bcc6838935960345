import type net from 'node:net';
import type { Logger } from '../../lib/logger.js';
import type { AgentState } from '../supervisor.js';
import { adoptClientSocket, type ClientReader } from './client-socket.js';
import { headEnd, MAX_HEAD_BYTES, parseRequestHead, type RequestHead } from './head.js';
import { COPY_LIMIT, ResponseRelay, St, withHead } from './relay.js';
import { routeRequest } from './route.js';
import { upgradeOf, upstreamHead } from './rewrite.js';
import type { UpstreamPool } from './upstream-pool.js';

export interface RawProxyDeps {
  token: string;
  runtimePort: number;
  ownPort: number;
  agentState: () => AgentState;
  now: () => number;
  pool: UpstreamPool;
  logger: Logger;
  /** Whether a request target belongs to the http server (the control surface). */
  isLocal: (target: string) => boolean;
  /**
   * How client connections are read: `onread` (default) takes the accepted socket's handle
   * over for reads into a reused buffer (./client-socket.ts); `events` reads the accepted
   * socket with 'data' events, which is also what happens when the handle cannot be taken.
   */
  readWith?: 'onread' | 'events';
  /** Gives the connection to the http server; unhandled bytes are already unshifted. */
  handOff: (socket: net.Socket) => void;
}

const BAD_REQUEST = Buffer.from('HTTP/1.1 400 Bad Request\r\nconnection: close\r\ncontent-length: 0\r\n\r\n', 'latin1');
const IDLE_TIMEOUT_MS = 65_000;
/** A client connection's read buffer: a full request head fits. */
const READ_BUFFER_BYTES = MAX_HEAD_BYTES;

/**
 * One client connection on the raw proxy. Request heads are parsed and checked here
 * (target, signed context, framing); a request the fast path does not serve (the control
 * surface, HTTP/1.0, a refused context, CONNECT) hands the whole connection to the http
 * server at that request boundary, so the http server answers it exactly as before.
 * Bodies stream in both directions as they arrive, with back-pressure each way; a
 * response completes before the next pipelined request is read. The response side is
 * `ResponseRelay`'s.
 */
export class ClientConnection extends ResponseRelay implements ClientReader {
  readonly socket: net.Socket;
  private paused = false;
  private clientEnded = false;
  private readonly remote: string | undefined;
  /** Where the client's reads land; replaced once a write still references a chunk of it. */
  private readBuf: Buffer | null = null;
  private readBufKept = false;
  private handedOff = false;
  /** Reads arrive through `onread` (else through 'data' events, `onData`). */
  private readonly byOnread: boolean;

  private readonly onData = (chunk: Buffer) => this.clientRead(chunk);
  private readonly onEnd = () => this.clientEnd();
  private readonly onClose = () => this.clientClose();
  private readonly onTimeout = () => this.clientTimeout();
  private readonly onUpstreamDrain = () => this.resumeClient();

  /** `accepted`: a connection accepted paused; it is taken over as `socket`. */
  constructor(
    accepted: net.Socket,
    protected readonly deps: RawProxyDeps,
  ) {
    super();
    const adopted = deps.readWith === 'events' ? null : adoptClientSocket(accepted, this, true);
    const socket = adopted ?? accepted;
    this.socket = socket;
    this.byOnread = adopted !== null;
    if (adopted === null) {
      socket.on('data', this.onData);
      socket.resume();
    }
    this.remote = socket.remoteAddress;
    socket.on('end', this.onEnd);
    socket.on('close', this.onClose);
    socket.on('error', ignore);
    socket.on('timeout', this.onTimeout);
    socket.setTimeout(IDLE_TIMEOUT_MS);
  }

  destroy(): void {
    this.socket.destroy();
  }

  // ---- client side ----

  readBuffer(): Buffer {
    if (this.readBuf === null || this.readBufKept) {
      this.readBuf = Buffer.allocUnsafe(READ_BUFFER_BYTES);
      this.readBufKept = false;
    }
    return this.readBuf;
  }

  /** `chunk` lives in the read buffer: whatever outlives this call is copied (or the buffer let go). */
  clientRead(chunk: Buffer): void {
    switch (this.state) {
      case St.Head: {
        const buf = this.buf;
        if (buf === null) return this.readHead(chunk);
        this.buf = null;
        this.readHead(Buffer.concat([buf, chunk]));
        return;
      }
      case St.Exchange:
        if (this.req.complete) this.keep(chunk);
        else this.forwardRequestBody(chunk, 0);
        return;
      case St.Tunnel:
        this.toUpstream(chunk);
        return;
      case St.Done:
        // Handed off: the http server reads the stream as it would any socket's.
        if (this.handedOff && this.byOnread) this.socket.push(Buffer.from(chunk));
        return;
    }
  }

  private clientEnd(): void {
    this.clientEnded = true;
    if (this.state === St.Head) {
      this.state = St.Done;
      this.socket.end();
    } else if (this.state === St.Tunnel) {
      this.up?.socket.end();
    } else if (this.state === St.Exchange && !this.req.complete) {
      // The request can never complete: nothing sensible can come back.
      this.dropUpstream();
      this.socket.destroy();
    }
  }

  private clientClose(): void {
    this.state = St.Done;
    // Never back to the pool mid-exchange: the upstream is still talking about this request.
    this.dropUpstream();
  }

  private clientTimeout(): void {
    if (this.state === St.Head || this.state === St.Done) this.socket.destroy();
  }

  /** Reads the head starting `buf` (nothing else is kept in `this.buf` now). */
  private readHead(buf: Buffer): void {
    let head: RequestHead;
    let end: number;
    try {
      end = headEnd(buf, 0);
      if (end < 0) return this.keep(buf);
      head = parseRequestHead(buf, 0, end);
    } catch (err) {
      return this.badRequest(err);
    }
    this.startExchange(head, buf, end);
  }

  /** Keeps (a copy of) bytes for later; stops reading once a full head's worth is waiting. */
  private keep(chunk: Buffer): void {
    this.buf = this.buf === null ? Buffer.from(chunk) : Buffer.concat([this.buf, chunk]);
    if (this.buf.length > MAX_HEAD_BYTES) this.pauseClient();
  }

  private pauseClient(): void {
    if (this.paused) return;
    this.paused = true;
    this.socket.pause();
  }

  protected resumeClient(): void {
    if (!this.paused) return;
    this.paused = false;
    this.socket.resume();
  }

  private badRequest(err: unknown): void {
    this.deps.logger.debug({ err: (err as Error).message }, 'malformed request refused');
    this.state = St.Done;
    this.buf = null;
    this.socket.end(BAD_REQUEST);
  }

  private handOff(buf: Buffer): void {
    this.state = St.Done;
    this.handedOff = true;
    const s = this.socket;
    s.off('data', this.onData);
    s.off('end', this.onEnd);
    s.off('close', this.onClose);
    s.off('timeout', this.onTimeout);
    s.setTimeout(0);
    s.unshift(Buffer.from(buf));
    this.deps.handOff(s);
    if (this.paused) s.resume();
  }

  // ---- one request ----

  private startExchange(head: RequestHead, buf: Buffer, end: number): void {
    const deps = this.deps;
    const route = routeRequest(head, deps);
    if (route === null) return this.handOff(buf);
    const framing = head.framing;
    this.req.start(framing);
    // Where the body bytes already here stop, checked before anything reaches the upstream.
    let stop: number;
    try {
      stop = this.req.stop(buf, end);
    } catch (err) {
      return this.badRequest(err);
    }
    this.upgrade = upgradeOf(head);
    const text = upstreamHead(head, route.path, deps.token, this.remote, this.upgrade);
    this.state = St.Exchange;
    this.isHead = head.method === 'HEAD';
    this.closeAfter = route.close || this.upgrade !== undefined;
    this.setCookie = route.setCookie;
    this.resStarted = false;
    this.resReusable = true;
    this.resBuf = null;
    const up = deps.pool.acquire(route.port, this);
    this.up = up;
    this.retryHead = framing.kind === 'none' && up.uses > 0 ? text : null;
    // Body bytes already here go out with the head, in one write.
    if (stop === end) up.socket.write(text, 'latin1');
    else if (stop - end <= COPY_LIMIT) this.toUpstream(withHead(text, buf, end, stop));
    else {
      up.socket.cork();
      up.socket.write(text, 'latin1');
      this.toUpstream(buf.subarray(end, stop));
      up.socket.uncork();
    }
    if (stop < buf.length) this.keep(buf.subarray(stop));
  }

  /** Where the request body stops in `buf[start..]`; -1 after a malformed chunked body (then answered). */
  private requestStop(buf: Buffer, start: number): number {
    try {
      return this.req.stop(buf, start);
    } catch (err) {
      this.failRequest(err);
      return -1;
    }
  }

  private forwardRequestBody(buf: Buffer, start: number): void {
    const stop = this.requestStop(buf, start);
    if (stop < 0) return;
    if (stop > start) this.toUpstream(start === 0 && stop === buf.length ? buf : buf.subarray(start, stop));
    if (stop < buf.length) this.keep(buf.subarray(stop));
  }

  /** A request body went bad after its head left: the upstream connection is spoiled. */
  private failRequest(err: unknown): void {
    this.dropUpstream();
    if (!this.resStarted) this.badRequest(err);
    else this.socket.destroy();
  }

  protected toUpstream(chunk: Buffer): void {
    const up = this.up;
    if (up === null) return;
    const full = !up.socket.write(chunk);
    // Not taken by the kernel at once: the next read must not overwrite those bytes.
    if (up.socket.writableLength > 0) this.readBufKept = true;
    if (full) {
      this.pauseClient();
      up.socket.once('drain', this.onUpstreamDrain);
    }
  }

  protected finishResponse(): void {
    const up = this.up;
    this.up = null;
    if (up !== null) {
      up.socket.off('drain', this.onUpstreamDrain);
      if (this.resReusable && this.req.complete) {
        up.socket.resume();
        up.release();
      } else up.destroy();
    }
    this.socket.off('drain', this.onClientDrain);
    if (!this.closeAfter) {
      this.state = St.Head;
      this.resumeClient();
      const buf = this.buf;
      if (buf !== null) {
        this.buf = null;
        this.readHead(buf);
      }
      // A client that sent its requests and then FIN gets every answer, then the close.
      if (!this.clientEnded || this.state !== St.Head) return;
    }
    this.state = St.Done;
    this.buf = null;
    this.socket.end();
  }
}

const ignore = (): undefined => undefined;
