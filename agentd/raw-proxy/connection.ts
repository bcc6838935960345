import type net from 'node:net';
import type { Logger } from '../../infra/logger.js';
import { HttpError } from '../http-util.js';
import { writeRawError } from '../proxy.js';
import type { AgentState } from '../supervisor.js';
import { BodyTracker } from './body.js';
import { adoptClientSocket, type ClientReader } from './client-socket.js';
import { headEnd, MAX_HEAD_BYTES, NO_BODY, parseRequestHead, parseResponseHead, type Framing, type RequestHead } from './head.js';
import { routeRequest } from './route.js';
import { downstreamHead, switchingHead, upgradeOf, upstreamHead } from './rewrite.js';
import type { Upstream, UpstreamOwner, UpstreamPool } from './upstream-pool.js';

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
  /** Gives the connection to the http server; unhandled bytes are already unshifted. */
  handOff: (socket: net.Socket) => void;
}

const BAD_REQUEST = Buffer.from('HTTP/1.1 400 Bad Request\r\nconnection: close\r\ncontent-length: 0\r\n\r\n', 'latin1');
const IDLE_TIMEOUT_MS = 65_000;
/** Up to this many first body bytes are copied behind the response head (one write). */
const COPY_LIMIT = 16 * 1024;
/** A client connection's read buffer: a full request head fits. */
const READ_BUFFER_BYTES = MAX_HEAD_BYTES;

const enum St {
  /** Between requests: reading the next head. */
  Head,
  /** A request is out to the upstream (its body may still be streaming). */
  Exchange,
  /** After a 101: bytes flow both ways untouched. */
  Tunnel,
  /** Finished or handed off; nothing more is read here. */
  Done,
}

/**
 * One client connection on the raw proxy. Request heads are parsed and checked here
 * (target, signed context, framing); a request the fast path does not serve (the control
 * surface, HTTP/1.0, a refused context, CONNECT) hands the whole connection to the http
 * server at that request boundary, so the http server answers it exactly as before.
 * Bodies stream in both directions as they arrive, with back-pressure each way; a
 * response completes before the next pipelined request is read.
 */
export class ClientConnection implements UpstreamOwner, ClientReader {
  readonly socket: net.Socket;
  private state = St.Head;
  /** Client bytes not yet handled: a partial head, or pipelined requests waiting. */
  private buf: Buffer | null = null;
  private paused = false;
  private clientEnded = false;
  private readonly remote: string | undefined;
  /** Where the client's reads land; replaced once a write still references a chunk of it. */
  private readBuf: Buffer | null = null;
  private readBufKept = false;
  private handedOff = false;

  // The exchange in flight.
  private up: Upstream | null = null;
  private isHead = false;
  private upgrade: string | undefined;
  private closeAfter = false;
  private setCookie: string | undefined;
  /** The head as sent, when it may be re-sent on a fresh connection (reused one died first). */
  private retryHead: string | null = null;
  /** The request body; `req.complete` once all of it is out to the upstream. */
  private readonly req = new BodyTracker();
  private resBuf: Buffer | null = null;
  private resStarted = false;
  private readonly res = new BodyTracker();
  private resReusable = true;

  private readonly onEnd = () => this.clientEnd();
  private readonly onClose = () => this.clientClose();
  private readonly onTimeout = () => this.clientTimeout();
  private readonly onClientDrain = () => this.up?.socket.resume();
  private readonly onUpstreamDrain = () => this.resumeClient();

  /** `accepted`: a connection accepted paused; it is taken over as `socket`. */
  constructor(
    accepted: net.Socket,
    private readonly deps: RawProxyDeps,
  ) {
    const socket = adoptClientSocket(accepted, this, true);
    this.socket = socket;
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
        if (this.handedOff) this.socket.push(Buffer.from(chunk));
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

  private resumeClient(): void {
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
    if (framing.kind === 'chunked') {
      // Check the body bytes already here before anything reaches the upstream.
      try {
        this.req.stop(buf, end);
      } catch (err) {
        return this.badRequest(err);
      }
      this.req.start(framing);
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
    const stop = this.requestStop(buf, end);
    if (stop < 0) return;
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

  private toUpstream(chunk: Buffer): void {
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

  /** Writes upstream bytes (maybe the upstream's reused read buffer) to the client. */
  private toClient(chunk: Buffer): void {
    const full = !this.socket.write(chunk);
    // Not taken by the kernel at once: the bytes are still referenced, so the upstream
    // must not read into that memory again.
    if (this.socket.writableLength > 0) this.up?.retain();
    if (full) {
      this.up?.socket.pause();
      this.socket.once('drain', this.onClientDrain);
    }
  }

  private dropUpstream(): void {
    const up = this.up;
    this.up = null;
    up?.destroy();
  }

  // ---- upstream side ----

  onUpstreamData(up: Upstream, chunk: Buffer): void {
    if (up !== this.up) return;
    if (this.state === St.Tunnel) return this.toClient(chunk);
    if (this.resStarted) return this.forwardResponseBody(chunk, 0);
    // `chunk` lives in the upstream's read buffer: a partial head is kept as a copy.
    const buf = this.resBuf === null ? chunk : Buffer.concat([this.resBuf, chunk]);
    this.resBuf = null;
    this.readResponseHead(buf);
  }

  private readResponseHead(buf: Buffer): void {
    let start = 0;
    for (;;) {
      let end: number;
      let head: ReturnType<typeof parseResponseHead>;
      try {
        end = headEnd(buf, start);
        if (end < 0) {
          this.resBuf = Buffer.from(buf.subarray(start));
          return;
        }
        head = parseResponseHead(buf, start, end);
      } catch (err) {
        return this.badGateway(err as Error);
      }
      const status = head.status;
      if (status === 101) {
        if (this.upgrade === undefined) return this.badGateway(new Error('101 without an upgrade request'));
        this.state = St.Tunnel;
        this.retryHead = null;
        this.socket.cork();
        this.socket.write(switchingHead(head), 'latin1');
        if (end < buf.length) this.toClient(buf.subarray(end));
        this.socket.uncork();
        const early = this.buf;
        this.buf = null;
        if (early !== null) this.toUpstream(early);
        this.resumeClient();
        return;
      }
      if (status < 200) {
        // Interim (100 Continue, 103 Early Hints): relay and read the final head next.
        this.retryHead = null;
        this.socket.write(downstreamHead(head, undefined, false), 'latin1');
        start = end;
        continue;
      }
      const framing: Framing = this.isHead || status === 204 || status === 304 ? NO_BODY : head.framing;
      this.res.start(framing);
      this.resReusable = !head.close && framing.kind !== 'close';
      if (framing.kind === 'close' || !this.req.complete) this.closeAfter = true;
      this.resStarted = true;
      this.retryHead = null;
      const text = downstreamHead(head, this.setCookie, this.closeAfter);
      const stop = this.responseStop(buf, end);
      if (stop < 0) return;
      if (stop - end <= COPY_LIMIT) this.toClient(withHead(text, buf, end, stop));
      else {
        this.socket.cork();
        this.socket.write(text, 'latin1');
        this.toClient(buf.subarray(end, stop));
        this.socket.uncork();
      }
      this.afterResponseBytes(stop, buf.length);
      return;
    }
  }

  private forwardResponseBody(buf: Buffer, start: number): void {
    const stop = this.responseStop(buf, start);
    if (stop < 0) return;
    if (stop > start) this.toClient(start === 0 && stop === buf.length ? buf : buf.subarray(start, stop));
    this.afterResponseBytes(stop, buf.length);
  }

  /** Where the response's bytes stop in `buf[start..]`; -1 after a broken chunked body (both connections are gone then). */
  private responseStop(buf: Buffer, start: number): number {
    try {
      return this.res.stop(buf, start);
    } catch {
      this.dropUpstream();
      this.socket.destroy();
      return -1;
    }
  }

  private afterResponseBytes(stop: number, len: number): void {
    if (!this.res.complete) return;
    if (stop < len) this.resReusable = false; // bytes past the response: out of step
    this.finishResponse();
  }

  private finishResponse(): void {
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

  onUpstreamEnd(up: Upstream): void {
    if (up !== this.up) return;
    if (this.state === St.Tunnel) return void this.socket.end();
    if (this.resStarted && this.res.kind === 'close') return this.finishResponse();
    this.upstreamLost(up);
  }

  onUpstreamClose(up: Upstream): void {
    if (up !== this.up) return;
    if (this.state === St.Tunnel) {
      this.up = null;
      return void this.socket.destroy();
    }
    if (this.resStarted && this.res.kind === 'close') return this.finishResponse();
    this.upstreamLost(up);
  }

  /** The upstream went away before its response was complete. */
  private upstreamLost(up: Upstream): void {
    const retry = this.retryHead;
    if (retry !== null && up.uses > 0 && !this.resStarted && this.resBuf === null) {
      // A kept-alive connection the upstream had just closed: say it again on another.
      up.destroy();
      const next = this.deps.pool.acquire(up.port, this);
      this.up = next;
      this.retryHead = next.uses > 0 ? retry : null;
      next.socket.write(retry, 'latin1');
      return;
    }
    this.badGateway(new Error('upstream closed'));
  }

  private badGateway(err: Error): void {
    const port = this.up?.port;
    this.dropUpstream();
    if (this.resStarted) return void this.socket.destroy();
    this.deps.logger.debug({ port, err: err.message }, 'upstream unreachable');
    this.state = St.Done;
    this.buf = null;
    writeRawError(this.socket, new HttpError(502, 'Bad gateway', `Nothing answered on port ${port}.`));
  }
}

const ignore = (): undefined => undefined;

/** `head` (latin1) and `buf[start, stop)` in one new buffer: one plain write, not a writev of a string and a buffer. */
function withHead(head: string, buf: Buffer, start: number, stop: number): Buffer {
  const out = Buffer.allocUnsafe(head.length + stop - start);
  out.write(head, 0, 'latin1');
  buf.copy(out, head.length, start, stop);
  return out;
}
