import { HeadError, MAX_HEAD_BYTES } from './head.js';

const enum S {
  SizeStart,
  Size,
  Ext,
  SizeLf,
  Data,
  DataCr,
  DataLf,
  TrailerStart,
  Trailer,
  TrailerLf,
  EndLf,
  Done,
}

const CR = 13;
const LF = 10;
const MAX_SIZE_DIGITS = 13; // 16^13 > any body this proxy will see, and < 2^53
const MAX_EXT_BYTES = 1024;

/** The states that expect one exact byte: that byte, the state after it, the complaint. */
const FIXED: Record<S.DataCr | S.DataLf | S.TrailerLf, [number, S, string]> = {
  [S.DataCr]: [CR, S.DataLf, 'Chunk data must end with CRLF.'],
  [S.DataLf]: [LF, S.SizeStart, 'Chunk data must end with CRLF.'],
  [S.TrailerLf]: [LF, S.TrailerStart, 'A trailer line must end with CRLF.'],
};

/** `next` when `c` is the byte the syntax requires here; otherwise the body is malformed. */
function expectByte(c: number, want: number, message: string, next = S.Done): S {
  if (c !== want) throw new HeadError(message);
  return next;
}

/** A byte of an extension or trailer line: CR ends it (`atCr`); control bytes and overlong text are refused. */
function textByte(c: number, tooLong: boolean, same: S, atCr: S, message: string): S {
  if (c === CR) return atCr;
  if ((c < 32 && c !== 9) || c === 127 || tooLong) throw new HeadError(message);
  return same;
}

function hexValue(c: number): number {
  if (c >= 48 && c <= 57) return c - 48;
  if (c >= 97 && c <= 102) return c - 87;
  if (c >= 65 && c <= 70) return c - 55;
  return -1;
}

/**
 * Follows a chunked body as its bytes go by, without copying or holding them: only the
 * size lines and trailers are read byte by byte, chunk data is skipped by length. The
 * bytes themselves are forwarded unchanged by the caller. A malformed size line,
 * extension or trailer throws (the stream cannot be resynchronised after that).
 */
export class ChunkedTracker {
  private state = S.SizeStart;
  private remaining = 0;
  private digits = 0;
  private extBytes = 0;
  private trailerBytes = 0;

  reset(): void {
    this.state = S.SizeStart;
    this.remaining = 0;
    this.digits = 0;
    this.extBytes = 0;
    this.trailerBytes = 0;
  }

  /** Reads `buf[start..]`; returns the index just past the body's end, or -1 if it goes on. */
  feed(buf: Buffer, start: number): number {
    let i = start;
    const n = buf.length;
    while (i < n) {
      switch (this.state) {
        case S.Data: {
          const take = Math.min(this.remaining, n - i);
          this.remaining -= take;
          i += take;
          if (this.remaining === 0) this.state = S.DataCr;
          continue;
        }
        case S.SizeStart:
        case S.Size: {
          const c = buf[i]!;
          const h = hexValue(c);
          if (h >= 0) {
            if (++this.digits > MAX_SIZE_DIGITS) throw new HeadError('A chunk size is too large.');
            this.remaining = this.remaining * 16 + h;
            this.state = S.Size;
          } else if (this.state === S.Size && c === CR) this.state = S.SizeLf;
          else if (this.state === S.Size && c === 59 /* ; */) this.state = S.Ext;
          else throw new HeadError('A chunk size is malformed.');
          break;
        }
        case S.Ext:
          this.state = textByte(buf[i]!, ++this.extBytes > MAX_EXT_BYTES, S.Ext, S.SizeLf, 'A chunk extension is malformed.');
          break;
        case S.SizeLf:
          expectByte(buf[i]!, LF, 'A chunk size line must end with CRLF.');
          this.digits = 0;
          this.extBytes = 0;
          this.state = this.remaining === 0 ? S.TrailerStart : S.Data;
          break;
        case S.DataCr:
        case S.DataLf:
        case S.TrailerLf: {
          const [want, next, message] = FIXED[this.state];
          this.state = expectByte(buf[i]!, want, message, next);
          break;
        }
        case S.TrailerStart:
          if (buf[i] === CR) this.state = S.EndLf;
          else {
            this.state = S.Trailer;
            continue; // the byte is part of the trailer line
          }
          break;
        case S.Trailer:
          this.state = textByte(buf[i]!, ++this.trailerBytes > MAX_HEAD_BYTES, S.Trailer, S.TrailerLf, 'A trailer line is malformed or too large.');
          break;
        case S.EndLf:
          this.state = expectByte(buf[i]!, LF, 'A chunked body must end with CRLF.', S.Done);
          return i + 1;
        case S.Done:
          return i;
      }
      i++;
    }
    return this.state === S.Done ? i : -1;
  }
}
