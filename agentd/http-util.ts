import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import type { z } from 'zod';

export const MAX_BODY_BYTES = 1024 * 1024;

/** An error with its HTTP answer; thrown by handlers, rendered in one place. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly reason: string,
    message: string,
    readonly details: Record<string, unknown> = {},
  ) {
    super(message);
    this.name = 'HttpError';
  }
}

export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  if (res.headersSent) {
    res.destroy();
    return;
  }
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
    'cache-control': 'no-store',
    ...headers,
  });
  res.end(text);
}

export function sendError(res: ServerResponse, err: HttpError): void {
  sendJson(
    res,
    err.status,
    { error: err.reason, message: err.message, ...err.details },
    err.status === 503 ? { 'retry-after': '1' } : {},
  );
}

export const unauthorized = (message: string) => new HttpError(401, 'Unauthorized', message);

/** Reads a JSON body of at most 1 MiB; an empty body reads as `{}`. */
export function readJsonBody(req: IncomingMessage): Promise<unknown> {
  return new Promise((resolve, reject) => {
    const declared = Number(req.headers['content-length']);
    if (Number.isFinite(declared) && declared > MAX_BODY_BYTES) {
      req.resume();
      reject(new HttpError(413, 'Payload too large', `The body must be at most ${MAX_BODY_BYTES} bytes.`));
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let failed = false;
    req.on('data', (c: Buffer) => {
      if (failed) return;
      size += c.length;
      if (size > MAX_BODY_BYTES) {
        failed = true;
        reject(new HttpError(413, 'Payload too large', `The body must be at most ${MAX_BODY_BYTES} bytes.`));
        return;
      }
      chunks.push(c);
    });
    req.on('error', (err) => {
      if (!failed) reject(new HttpError(400, 'Bad request', `The body could not be read: ${err.message}`));
      failed = true;
    });
    req.on('end', () => {
      if (failed) return;
      const text = Buffer.concat(chunks).toString('utf8');
      if (text.trim() === '') return resolve({});
      try {
        resolve(JSON.parse(text));
      } catch {
        reject(new HttpError(400, 'Bad request', 'The body is not valid JSON.'));
      }
    });
  });
}

/** Parses with zod; failure is a 400 carrying the contract's `issues`. */
export function parseBody<T extends z.ZodType>(schema: T, body: unknown): z.infer<T> {
  const r = schema.safeParse(body);
  if (r.success) return r.data;
  throw new HttpError(400, 'Validation failed', 'The request body is not valid.', {
    issues: r.error.issues.map((i) => ({ path: i.path.join('.'), message: i.message })),
  });
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
