import type { ErrorRequestHandler, RequestHandler } from 'express';
import { z } from 'zod';
import { DomainError, type ErrorCode } from '../domain/errors.js';
import type { Logger } from '../infra/logger.js';

/** The one mapping from typed errors to HTTP statuses. */
export const statusOf: Record<ErrorCode, number> = {
  validation: 400,
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  conflict: 409,
  merge_failed: 409,
  head_modified: 409,
  concurrency: 409,
  payload_too_large: 413,
  rate_limited: 429,
  unavailable: 503,
};

export interface ErrorBody {
  error: string;
  message: string;
  [k: string]: unknown;
}

export function bodyOf(err: DomainError): ErrorBody {
  return { error: err.reason, message: err.message, ...err.details };
}

export const zodIssues = (err: z.ZodError) =>
  err.issues.map((i) => ({ path: i.path.join('.') || '(body)', message: i.message }));

/** Turns anything thrown into the contract's error body; never leaks internals. */
export function errorHandler(logger: Logger): ErrorRequestHandler {
  return (err, req, res, _next) => {
    if (res.headersSent) return;
    if (err instanceof DomainError) {
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
      res.status(413).json({ error: 'Payload too large', message: 'The request body is larger than 1 MiB.' });
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
    logger.error({ err, method: req.method, url: req.originalUrl }, 'unhandled error');
    res.status(500).json({ error: 'Internal error', message: 'Something went wrong on our side.' });
  };
}

export const notFoundHandler: RequestHandler = (req, res) => {
  res.status(404).json({ error: 'Not found', message: `No route for ${req.method} ${req.path}.` });
};
