import type { IncomingMessage, ServerResponse } from 'node:http';
import express, { type Request, type RequestHandler, type Response } from 'express';
import { retryLater } from '../domain/errors.js';

/**
 * Request bodies are read after the caller is known, and only here (docs/api.md "Request
 * bodies"). Nothing in the app parses a body globally: each door reads it after its own
 * credential check (`requireAuth` for the API, the session cookie for the dashboard, the
 * sandbox key for the model gateway), with its own limit. The two doors whose credential
 * IS the body (password sign-in and `svc login`'s redemption) read at most 16 KiB.
 * A refused request is answered without reading its body (`unreadBodies`).
 */
export const KiB = 1024;
export const MiB = 1024 * KiB;
/** Every API route and dashboard form unless its documentation says otherwise. */
/** The API's default: 1 MiB. */
export const BODY_LIMIT = 1024 * KiB;
/** The doors whose credential travels in the body: sign-in and CLI login. */
export const CREDENTIAL_BODY_LIMIT = 16 * KiB;
/** A body larger than this that nobody read gets its connection closed instead of drained. */
export const DRAIN_LIMIT = 64 * KiB;

const human = (n: number) => (n % MiB === 0 ? `${n / MiB} MiB` : n % KiB === 0 ? `${n / KiB} KiB` : `${n} bytes`);

/** body-parser's own shape for a body over its limit, so every error handler maps it alike. */
export function tooLarge(limit: number): Error {
  return Object.assign(new Error(`The request body is larger than ${human(limit)}.`), {
    status: 413, statusCode: 413, expose: true, type: 'entity.too.large', limit, limitText: human(limit),
  });
}

/** The body's declared length (null: none declared, chunked or absent). */
export const declaredLength = (req: IncomingMessage): number | null => {
  const v = req.headers['content-length'];
  if (v === undefined || !/^\d+$/.test(v)) return null;
  return Number(v);
};

const hasBody = (req: IncomingMessage) => req.headers['transfer-encoding'] !== undefined || (declaredLength(req) ?? 0) > 0;

/**
 * Reads the body (JSON; forms too with `forms`: the dashboard's) into `req.body`, at most `limit` bytes: the one body
 * reader of the API and the dashboard, mounted after the credential check. A declared
 * length over the limit is refused at once, before a byte of it is read.
 * `limit` may depend on the request (null: this request's body is not read).
 */
export function readBody(limit: number | ((req: Request, res: Response) => number | null), opts: { forms?: boolean } = {}): RequestHandler {
  const parsers = new Map<number, RequestHandler[]>();
  const skip: RequestHandler = (_req, _res, next) => next();
  const parsersFor = (n: number) => {
    let p = parsers.get(n);
    if (!p) {
      p = [express.json({ limit: n, strict: false }), opts.forms ? express.urlencoded({ extended: false, limit: n, parameterLimit: 100 }) : skip];
      parsers.set(n, p);
    }
    return p;
  };
  return (req, res, next) => {
    const n = typeof limit === 'number' ? limit : limit(req, res);
    if (n === null || !hasBody(req)) return next();
    const declared = declaredLength(req);
    if (declared !== null && declared > n) return next(tooLarge(n));
    if (!req.is('application/json') && !(opts.forms && req.is('application/x-www-form-urlencoded'))) return next(); // nothing here reads it
    // body-parser drains a body past its limit before answering; this answers at the limit
    // (the rest is never read: `unreadBodies` closes the connection).
    let seen = 0;
    let settled = false;
    const done = (err?: unknown) => {
      if (settled) return;
      settled = true;
      req.removeListener('data', count);
      next(err);
    };
    const count = (c: Buffer) => {
      seen += c.length;
      if (seen > n) done(tooLarge(n));
    };
    req.on('data', count);
    const [json, form] = parsersFor(n);
    json!(req, res, (err?: unknown) => (err ? done(err) : form!(req, res, done)));
  };
}

/**
 * First in the app: a response that starts while its request's body is still unread and
 * large (declared over 64 KiB, or chunked) closes the connection after it (`Connection:
 * close`) instead of letting Node drain the body to keep the connection alive. So a
 * refused request (401, 404, 413, 429 ...) costs the server its headers, not its body.
 */
export const unreadBodies: RequestHandler = (req, res, next) => {
  if (!hasBody(req)) return next();
  const writeHead = res.writeHead;
  res.writeHead = function (this: ServerResponse, ...args: unknown[]) {
    if (!req.complete && !res.headersSent) {
      const declared = declaredLength(req);
      if (declared === null || declared > DRAIN_LIMIT) {
        // Node then ends the connection once the answer is written, instead of reading
        // the rest of the body to keep it alive.
        res.setHeader('Connection', 'close');
      }
    }
    return (writeHead as (...a: unknown[]) => ServerResponse).apply(this, args);
  } as typeof res.writeHead;
  next();
};

/**
 * A bound on the bytes of bodies a door holds at once, whoever sends them. A parsed JSON
 * body costs many times its size on the heap (tens of times for one of many small
 * objects): without this a few large bodies at once, each within its own limit and each
 * from a caller with a valid key, would exhaust the process every tenant shares. Each body
 * takes its declared length (or the door's limit, when chunked) until its answer ends; one
 * that does not fit is refused (429, Retry-After) unread.
 */
export function bodyBudget(totalBytes: number, limit: number): RequestHandler {
  let held = 0;
  return (req, res, next) => {
    if (!hasBody(req)) return next();
    const want = Math.min(declaredLength(req) ?? limit, limit);
    if (held + want > totalBytes) {
      return next(retryLater('rate_limited', 'Too many requests', `This server is reading ${human(totalBytes)} of request bodies at once; retry shortly.`, 1));
    }
    held += want;
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      held -= want;
    };
    res.once('close', release);
    res.once('finish', release);
    next();
  };
}
