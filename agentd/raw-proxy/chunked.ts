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
  /** Whether any chunk size line has been read completely (the body is well under way). */
  sawSizeLine = false;

  reset(): void {
    this.state = S.SizeStart;
    this.remaining = 0;
    this.digits = 0;
    this.extBytes = 0;
    this.trailerBytes = 0;
    this.sawSizeLine = false;
  }

  get done(): boolean {
    return this.state === S.Done;
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
        case S.Ext: {
          const c = buf[i]!;
          if (c === CR) this.state = S.SizeLf;
          else if ((c < 32 && c !== 9) || c === 127 || ++this.extBytes > MAX_EXT_BYTES) throw new HeadError('A chunk extension is malformed.');
          break;
        }
        case S.SizeLf:
          if (buf[i] !== LF) throw new HeadError('A chunk size line must end with CRLF.');
          this.sawSizeLine = true;
          this.digits = 0;
          this.extBytes = 0;
          this.state = this.remaining === 0 ? S.TrailerStart : S.Data;
          break;
        case S.DataCr:
          if (buf[i] !== CR) throw new HeadError('Chunk data must end with CRLF.');
          this.state = S.DataLf;
          break;
        case S.DataLf:
          if (buf[i] !== LF) throw new HeadError('Chunk data must end with CRLF.');
          this.state = S.SizeStart;
          break;
        case S.TrailerStart:
          if (buf[i] === CR) this.state = S.EndLf;
          else {
            this.state = S.Trailer;
            continue; // the byte is part of the trailer line
          }
          break;
        case S.Trailer: {
          const c = buf[i]!;
          if (++this.trailerBytes > MAX_HEAD_BYTES) throw new HeadError('The trailer is too large.');
          if (c === CR) this.state = S.TrailerLf;
          else if ((c < 32 && c !== 9) || c === 127) throw new HeadError('A trailer line is malformed.');
          break;
        }
        case S.TrailerLf:
          if (buf[i] !== LF) throw new HeadError('A trailer line must end with CRLF.');
          this.state = S.TrailerStart;
          break;
        case S.EndLf:
          if (buf[i] !== LF) throw new HeadError('A chunked body must end with CRLF.');
          this.state = S.Done;
          return i + 1;
        case S.Done:
          return i;
      }
      i++;
    }
    return this.state === S.Done ? i : -1;
  }
}
