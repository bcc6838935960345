import http from 'node:http';
/**
 * Strict HTTP/1.1 head parsing for the raw proxy: the request line (or status line) and
 * header lines, nothing else. Heads are decoded as latin1, so every byte survives the
 * round trip to the upstream unchanged. Anything ambiguous about framing — both
 * Content-Length and Transfer-Encoding, two Content-Lengths, a transfer coding other
 * than `chunked`, obs-fold, bare CR or LF, control characters — is a `HeadError` (400
 * and close), never a guess: the proxy and the upstream must agree on where a request ends.
 */

export const MAX_HEAD_BYTES = 16 * 1024;
export const MAX_HEADERS = 128;

export class HeadError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'HeadError';
  }
}

/** How a message body is delimited. `close`: until the sender closes (responses only). */
export type Framing = { kind: 'none' } | { kind: 'length'; length: number } | { kind: 'chunked' } | { kind: 'close' };

export interface RequestHead {
  method: string;
  target: string;
  /** 1 for HTTP/1.1, 0 for HTTP/1.0. */
  minor: number;
  /** Lower-cased names and trimmed values, in order, as flat pairs. */
  names: string[];
  values: string[];
  framing: Framing;
  /** Bytes of the head, CRLFCRLF included. */
  size: number;
}

export interface ResponseHead {
  status: number;
  statusLine: string;
  names: string[];
  values: string[];
  /** Header lines as received (`name: value`), parallel to names/values. */
  lines: string[];
  /** Framing from the headers alone; the caller applies HEAD / 1xx / 204 / 304. */
  framing: Framing;
  /** The upstream said `Connection: close` or spoke HTTP/1.0. */
  close: boolean;
  size: number;
}

const CRLFCRLF = Buffer.from('\r\n\r\n');
const REQUEST_LINE = /^([!#$%&'*+\-.^_`|~0-9A-Za-z]+) ([\x21-\x7e]+) HTTP\/1\.([01])$/;
const STATUS_LINE = /^HTTP\/1\.([01]) ([1-9][0-9]{2})(?: [\t\x20-\x7e\x80-\xff]*)?$/;
/** Per latin1 code: 1 a token character (RFC 9110 tchar), 2 allowed in a field value, 3 both. */
const CHAR_CLASS = new Uint8Array(256);
for (let c = 0; c < 256; c++) {
  const tchar = (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122) || "!#$%&'*+-.^_`|~".includes(String.fromCharCode(c));
  const vchar = c === 9 || (c >= 0x20 && c <= 0x7e) || c >= 0x80;
  CHAR_CLASS[c] = (tchar ? 1 : 0) | (vchar ? 2 : 0);
}
const DIGITS = /^[0-9]{1,15}$/;
const KNOWN_METHODS = new Set(http.METHODS);

/**
 * The end of the head that starts at `start`, or -1 while incomplete. Throws once the
 * head cannot be valid (too long, a bare LF that would end it).
 */
export function headEnd(buf: Buffer, start: number): number {
  const i = buf.indexOf(CRLFCRLF, start);
  if (i >= 0) {
    if (i + 4 - start > MAX_HEAD_BYTES) throw new HeadError('The request head is too large.');
    return i + 4;
  }
  if (buf.length - start > MAX_HEAD_BYTES) throw new HeadError('The request head is too large.');
  const lf = buf.indexOf(10, start);
  if (lf >= 0 && (lf === start || buf[lf - 1] !== 13)) throw new HeadError('Lines must end with CRLF.');
  return -1;
}

/** Splits head lines (`text` ends before the final CRLFCRLF) into names and values. */
function parseFields(text: string, from: number, names: string[], values: string[], lines: string[] | null): void {
  let pos = from;
  while (pos < text.length) {
    let eol = text.indexOf('\r\n', pos);
    if (eol < 0) eol = text.length;
    const colon = text.indexOf(':', pos);
    const first = text.charCodeAt(pos);
    if (first === 32 || first === 9) throw new HeadError('Folded header lines are not accepted.');
    if (colon < 0 || colon > eol) throw new HeadError('A header line is malformed.');
    // Checked by character class (not regexes), lower-cased only when it has capitals.
    if (colon === pos) throw new HeadError('A header name is malformed.');
    let upper = false;
    for (let i = pos; i < colon; i++) {
      const c = text.charCodeAt(i);
      if ((CHAR_CLASS[c]! & 1) === 0) throw new HeadError('A header name is malformed.');
      if (c <= 90 && c >= 65) upper = true;
    }
    const name = text.slice(pos, colon);
    let vs = colon + 1;
    let ve = eol;
    while (vs < ve && isOws(text.charCodeAt(vs))) vs++;
    while (ve > vs && isOws(text.charCodeAt(ve - 1))) ve--;
    for (let i = vs; i < ve; i++) if ((CHAR_CLASS[text.charCodeAt(i)]! & 2) === 0) throw new HeadError('A header value has characters it may not have.');
    const value = text.slice(vs, ve);
    if (names.length === MAX_HEADERS) throw new HeadError('Too many header lines.');
    names.push(upper ? name.toLowerCase() : name);
    values.push(value);
    lines?.push(text.slice(pos, eol));
    pos = eol + 2;
  }
}

const isOws = (c: number) => c === 32 || c === 9;

/** Framing from Content-Length / Transfer-Encoding, refusing every ambiguity. */
function framingOf(names: string[], values: string[], absent: Framing): Framing {
  let length = -1;
  let chunked = false;
  for (let i = 0; i < names.length; i++) {
    const n = names[i]!;
    if (n === 'content-length') {
      if (length >= 0) throw new HeadError('Content-Length appears more than once.');
      const v = values[i]!;
      if (!DIGITS.test(v)) throw new HeadError('Content-Length is not a length.');
      length = Number(v);
      if (length > Number.MAX_SAFE_INTEGER) throw new HeadError('Content-Length is too large.');
    } else if (n === 'transfer-encoding') {
      if (chunked) throw new HeadError('Transfer-Encoding appears more than once.');
      if (values[i]!.toLowerCase() !== 'chunked') throw new HeadError('Only the chunked transfer coding is accepted.');
      chunked = true;
    }
  }
  if (chunked && length >= 0) throw new HeadError('Content-Length and Transfer-Encoding together are ambiguous.');
  if (chunked) return { kind: 'chunked' };
  if (length >= 0) return length === 0 ? NO_BODY : { kind: 'length', length };
  return absent;
}

export const NO_BODY: Framing = { kind: 'none' };
const CLOSE_DELIMITED: Framing = { kind: 'close' };

/** Parses the request head in `buf[start, end)` (`end` from `headEnd`). */
export function parseRequestHead(buf: Buffer, start: number, end: number): RequestHead {
  const text = buf.toString('latin1', start, end - 4);
  const eol = text.indexOf('\r\n');
  const m = REQUEST_LINE.exec(eol < 0 ? text : text.slice(0, eol));
  if (m === null) throw new HeadError('The request line is malformed.');
  // Only what llhttp (the upstreams' usual parser) also reads as a request: a method it
  // knows, and an origin-form target (the only form the proxy routes).
  if (!KNOWN_METHODS.has(m[1]!)) throw new HeadError('The request method is not known.');
  if (m[2]!.charCodeAt(0) !== 47) throw new HeadError('The request target must be a path.');
  const names: string[] = [];
  const values: string[] = [];
  if (eol >= 0) parseFields(text, eol + 2, names, values, null);
  return { method: m[1]!, target: m[2]!, minor: Number(m[3]), names, values, framing: framingOf(names, values, NO_BODY), size: end - start };
}

/** Parses a response head in `buf[start, end)`. */
export function parseResponseHead(buf: Buffer, start: number, end: number): ResponseHead {
  const text = buf.toString('latin1', start, end - 4);
  const eol = text.indexOf('\r\n');
  const statusLine = eol < 0 ? text : text.slice(0, eol);
  const m = STATUS_LINE.exec(statusLine);
  if (m === null) throw new HeadError('The status line is malformed.');
  const names: string[] = [];
  const values: string[] = [];
  const lines: string[] = [];
  if (eol >= 0) parseFields(text, eol + 2, names, values, lines);
  let close = m[1] === '0';
  for (let i = 0; i < names.length; i++) {
    if (names[i] === 'connection') close = hasToken(values[i]!, 'close') || (close && !hasToken(values[i]!, 'keep-alive'));
  }
  return { status: Number(m[2]), statusLine, names, values, lines, framing: framingOf(names, values, CLOSE_DELIMITED), close, size: end - start };
}

/** Whether a comma-separated header value lists `token` (case-insensitive). */
export function hasToken(value: string, token: string): boolean {
  if (value.length === token.length) return value.toLowerCase() === token;
  if (!value.includes(',')) return value.length > token.length && value.trim().toLowerCase() === token;
  for (const part of value.split(',')) if (part.trim().toLowerCase() === token) return true;
  return false;
}
