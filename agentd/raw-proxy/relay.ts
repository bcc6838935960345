import type net from 'node:net';
import { HttpError, writeRawError } from '../http-util.js';
import { BodyTracker } from './body.js';
import type { RawProxyDeps } from './connection.js';
import { headEnd, NO_BODY, parseResponseHead, type Framing } from './head.js';
import { downstreamHead, switchingHead } from './rewrite.js';
import type { Upstream, UpstreamOwner } from './upstream-pool.js';

/** Up to this many body bytes are copied behind a head (one write). */
export const COPY_LIMIT = 16 * 1024;

export const enum St {
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
 * The upstream half of a client connection (`ClientConnection` is the client half): the
 * exchange in flight, and its response relayed to the client — the head read, checked and
 * rewritten, the body passed on by its framing as it arrives (with back-pressure), a
 * kept-alive upstream that died before answering asked again, a 502 when nothing answers,
 * and after a 101 the tunnel's upstream side.
 */
export abstract class ResponseRelay implements UpstreamOwner {
  abstract readonly socket: net.Socket;
  protected abstract readonly deps: RawProxyDeps;
  protected state = St.Head;
  /** Client bytes not yet handled: a partial head, or pipelined requests waiting. */
  protected buf: Buffer | null = null;

  // The exchange in flight.
  protected up: Upstream | null = null;
  protected isHead = false;
  protected upgrade: string | undefined;
  protected closeAfter = false;
  protected setCookie: string | undefined;
  /** The head as sent, when it may be re-sent on a fresh connection (reused one died first). */
  protected retryHead: string | null = null;
  /** The request body; `req.complete` once all of it is out to the upstream. */
  protected readonly req = new BodyTracker();
  protected resBuf: Buffer | null = null;
  protected resStarted = false;
  protected readonly res = new BodyTracker();
  protected resReusable = true;
  protected readonly onClientDrain = () => this.up?.socket.resume();

  /** Client bytes to the upstream (the request body, or the tunnel). */
  protected abstract toUpstream(chunk: Buffer): void;
  protected abstract resumeClient(): void;
  /** The response is complete (or ended by a close): on to the next request, or the end. */
  protected abstract finishResponse(): void;

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

  protected dropUpstream(): void {
    const up = this.up;
    this.up = null;
    up?.destroy();
  }

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

/** `head` (latin1) and `buf[start, stop)` in one new buffer: one plain write, not a writev of a string and a buffer. */
export function withHead(head: string, buf: Buffer, start: number, stop: number): Buffer {
  const out = Buffer.allocUnsafe(head.length + stop - start);
  out.write(head, 0, 'latin1');
  buf.copy(out, head.length, start, stop);
  return out;
}
