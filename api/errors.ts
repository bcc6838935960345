import http from 'node:http';
import type { Duplex } from 'node:stream';
import type { ErrorRequestHandler, RequestHandler } from 'express';
import { z } from 'zod';
import { DomainError, type ErrorCode } from '../domain/errors.js';
import type { Logger } from '../lib/logger.js';
import { isResourceExhausted } from '../lib/spawn.js';

/** The one mapping from typed errors to HTTP statuses. */
export const statusOf: Record<ErrorCode, number> = {
  validation: 400,
  unauthorized: 401,
  forbidden: 403,
  agent_cannot_merge: 403,
  agent_forbidden: 403,
  not_found: 404,
  gone: 410,
  conflict: 409,
  merge_failed: 409,
  head_modified: 409,
  concurrency: 409,
  no_required_checks: 422,
  merge_queue_enabled: 409,
  payload_too_large: 413,
  rate_limited: 429,
  unavailable: 503,
  timeout: 504,
};

export interface ErrorBody {
  error: string;
  message: string;
  [k: string]: unknown;
}

/** Refusals an agent must tell apart carry the machine-readable `code` (contracts.md "Agent tokens"). */
const CODED = new Set<ErrorCode>(['agent_cannot_merge', 'agent_forbidden', 'no_required_checks', 'merge_queue_enabled']);

export function bodyOf(err: DomainError): ErrorBody {
  return { error: err.reason, message: err.message, ...(CODED.has(err.code) ? { code: err.code } : {}), ...err.details };
}

export const zodIssues = (err: z.ZodError) =>
  err.issues.map((i) => ({ path: i.path.join('.') || '(body)', message: i.message }));

/** The limit a body-size error names (api/body.ts sets `limitText`; body-parser sets `limit` in bytes). */
export const limitText = (err: unknown): string => {
  const e = err as { limitText?: unknown; limit?: unknown };
  if (typeof e.limitText === 'string') return e.limitText;
  return typeof e.limit === 'number' ? (e.limit % 1024 === 0 ? `${e.limit / 1024} KiB` : `${e.limit} bytes`) : 'its limit';
};

/** Turns anything thrown into the contract's error body; never leaks internals. */
export function errorHandler(logger: Logger): ErrorRequestHandler {
  return (err, req, res, _next) => {
    if (res.headersSent) return;
    if (err instanceof DomainError) {
      if (typeof err.details.retry_after === 'number') res.set('Retry-After', String(err.details.retry_after));
      res.status(statusOf[err.code]).json(bodyOf(err));
      return;
    }
    if (err instanceof z.ZodError) {
      const issues = zodIssues(err);
      res.status(400).json({ error: 'Validation failed', message: issues.map((i) => `${i.path}: ${i.message}`).join('; '), issues });
      return;
    }
    // body-parser's typed failures
    const type = (err as { type?: string }).type;
    if (type === 'entity.too.large') {
      res.status(413).json({ error: 'Payload too large', message: `The request body is larger than ${limitText(err)}.` });
      return;
    }
    if (type === 'entity.parse.failed') {
      res.status(400).json({ error: 'Invalid JSON', message: 'The request body is not valid JSON.' });
      return;
    }
    if (type === 'encoding.unsupported' || type === 'charset.unsupported' || type === 'entity.verify.failed' || type === 'request.aborted') {
      res.status(400).json({ error: 'Bad request', message: 'The request body could not be read.' });
      return;
    }
    if (err instanceof URIError) {
      res.status(400).json({ error: 'Bad request', message: 'The URL is not valid.' });
      return;
    }
    // Any other client error raised by the HTTP layer (http-errors: a body that does not
    // decompress, an unsupported content encoding ...): its 4xx status, our body.
    const status = (err as { status?: unknown }).status ?? (err as { statusCode?: unknown }).statusCode;
    if (typeof status === 'number' && status >= 400 && status < 500 && (err as { expose?: unknown }).expose !== false) {
      res.status(status).json({ error: http.STATUS_CODES[status] ?? 'Bad request', message: 'The request could not be read.' });
      return;
    }
    if (isResourceExhausted(err)) {
      // The machine is short of files, memory or processes (a spawn refused): this
      // request fails, the server does not, and the client may try again shortly.
      logger.warn({ err: (err as Error).message, method: req.method, path: req.path }, 'request failed: the server is short of a resource');
      res.set('Retry-After', '5').status(503).json({ error: 'Unavailable', message: 'The server is short of a resource right now; try again shortly.' });
      return;
    }
    logger.error({ err, method: req.method, path: req.path /* never the query: it may carry ?access_token= */ }, 'unhandled error');
    res.status(500).json({ error: 'Internal error', message: 'Something went wrong on our side.' });
  };
}

export const notFoundHandler: RequestHandler = (req, res) => {
  res.status(404).json({ error: 'Not found', message: `No route for ${req.method} ${req.path}.` });
};

/**
 * Requests Node's HTTP parser refuses before any route sees them (raw non-ASCII bytes in
 * the path, oversized headers, malformed framing) still get the contract's error body.
 */
export function clientErrorHandler(err: Error & { code?: string }, socket: Duplex): void {
  if (err.code === 'ECONNRESET' || !socket.writable) {
    socket.destroy();
    return;
  }
  const status = err.code === 'HPE_HEADER_OVERFLOW' ? 431 : err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 408 : 400;
  const body = JSON.stringify({ error: http.STATUS_CODES[status], message: 'The request is not valid HTTP.' });
  socket.end(
    `HTTP/1.1 ${status} ${http.STATUS_CODES[status]}\r\nContent-Type: application/json; charset=utf-8\r\n` +
      `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
  );
  setTimeout(() => socket.destroy(), 1000).unref();
}

/**
 * The model gateway (`/v1/llm`) answers errors in OpenAI's shape, not the contract's, so
 * the agent runtime shows them: `{"error":{"message","type","param":null,"code"}}`. The
 * same typed errors, mapped to the same statuses, written another way.
 */
export function openAiErrorHandler(logger: Logger): ErrorRequestHandler {
  return (err, req, res, _next) => {
    if (res.headersSent) {
      res.destroy();
      return;
    }
    let status = 500;
    let message = 'Something went wrong on our side.';
    let code: string | null = 'internal_error';
    let type: string | undefined;
    if (err instanceof DomainError) {
      status = statusOf[err.code];
      message = err.message;
      code = typeof err.details.code === 'string' ? err.details.code : err.code;
      if (typeof err.details.type === 'string') type = err.details.type;
      if (typeof err.details.retry_after === 'number') res.set('Retry-After', String(err.details.retry_after));
    } else {
      const parseType = (err as { type?: string }).type;
      const s = (err as { status?: unknown }).status;
      if (parseType === 'entity.parse.failed') [status, message, code] = [400, 'The request body is not valid JSON.', 'invalid_json'];
      else if (parseType === 'entity.too.large') [status, message, code] = [413, `The request body is larger than ${limitText(err)}.`, 'request_too_large'];
      else if (typeof s === 'number' && s >= 400 && s < 500) [status, message, code] = [s, 'The request could not be read.', 'invalid_request'];
      else logger.error({ err, method: req.method, path: req.path }, 'unhandled gateway error');
    }
    res.status(status).json(openAiError(status, message, code, type));
  };
}

/** A 429 is a spent quota unless the error says otherwise (`rate_limit_error`: retry later). */
export function openAiError(status: number, message: string, code: string | null, type?: string) {
  type ??= status === 401 ? 'authentication_error' : status === 429 ? 'insufficient_quota' : status >= 500 ? 'server_error' : 'invalid_request_error';
  return { error: { message, type, param: null, code } };
}
