import { ChunkedTracker } from './chunked.js';
import { NO_BODY, type Framing } from './head.js';

/**
 * Follows one message body's framing over its bytes as they arrive, in whatever pieces:
 * where the body stops within each piece and whether it has ended. The same rules for a
 * request body (never close-delimited) and a response body.
 */
export class BodyTracker {
  private framing: Framing = NO_BODY;
  private remaining = 0;
  private readonly chunks = new ChunkedTracker();
  /** The body has ended (set by `stop`). */
  complete = false;

  get kind(): Framing['kind'] {
    return this.framing.kind;
  }

  /** A new body with this framing (also: forget the bytes fed so far). */
  start(framing: Framing): void {
    this.framing = framing;
    this.remaining = framing.kind === 'length' ? framing.length : 0;
    if (framing.kind === 'chunked') this.chunks.reset();
    this.complete = false;
  }

  /**
   * Where the body's bytes stop in `buf[start..]`, setting `complete` when that is its
   * end. Throws a `HeadError` on a malformed chunked body.
   */
  stop(buf: Buffer, start: number): number {
    const len = buf.length;
    switch (this.framing.kind) {
      case 'none':
        this.complete = true;
        return start;
      case 'length': {
        const take = Math.min(this.remaining, len - start);
        this.remaining -= take;
        this.complete = this.remaining === 0;
        return start + take;
      }
      case 'chunked': {
        const e = this.chunks.feed(buf, start);
        this.complete = e >= 0;
        return e >= 0 ? e : len;
      }
      case 'close':
        return len;
    }
  }
}
