/**
 * The one place that turns a failure into an exit code and a one-line message.
 * 0 ok · 1 the operation failed (API error, nothing resolved, cancelled) · 2 usage error.
 */
import type { ErrorCode, ErrorReason } from '../domain/errors.js';

/** Bad invocation: unknown command or flag, missing argument, flag needed off a TTY. */
export class UsageError extends Error {
  override name = 'UsageError';
}

/** The operation could not be done (nothing to act on, bad local state). */
export class CliError extends Error {
  override name = 'CliError';
  constructor(
    message: string,
    readonly hint?: string,
  ) {
    super(message);
  }
}

/** The user declined a prompt. */
export class CancelError extends Error {
  override name = 'CancelError';
  constructor(message = 'cancelled') {
    super(message);
  }
}

/** A response >= 400 from the API, with the contract's error body. */
export class ApiError extends Error {
  override name = 'ApiError';
  constructor(
    readonly status: number,
    readonly code: ErrorCode | 'server_error' | 'http_error',
    /** The body's short `error` reason. */
    readonly reason: string,
    message: string,
    readonly body: Record<string, unknown>,
    /** What to do, when the client knows better than the server (a refused token's source). */
    readonly hint?: string,
  ) {
    super(message);
  }
}

/** The host could not be reached at all. */
export class NetworkError extends Error {
  override name = 'NetworkError';
  /** The system's error code (ECONNREFUSED, ENOTFOUND ...), also when fetch wraps it. */
  readonly errno: string | undefined;
  constructor(
    readonly url: string,
    override readonly cause: unknown,
  ) {
    const errno = errnoOf(cause);
    super(`cannot reach ${url}: ${errno ?? (cause instanceof Error ? cause.message : String(cause))}`);
    this.errno = errno;
  }
}

function errnoOf(e: unknown, depth = 0): string | undefined {
  if (!e || typeof e !== 'object' || depth > 3) return undefined;
  const x = e as { code?: unknown; cause?: unknown; errors?: unknown };
  if (typeof x.code === 'string' && /^E[A-Z_]+$/.test(x.code)) return x.code;
  return errnoOf(x.cause, depth + 1) ?? (Array.isArray(x.errors) ? errnoOf(x.errors[0], depth + 1) : undefined);
}

/** What to do when nothing answers: start the server, or fix the host's URL. */
function networkHint(err: NetworkError): string {
  let origin = err.url;
  let host = err.url;
  try {
    const u = new URL(err.url);
    origin = u.origin;
    host = u.hostname;
  } catch {
    /* as given */
  }
  switch (err.errno) {
    case 'ECONNREFUSED':
      return `is svc-server running at ${origin}? start it with 'svc-server start' ('npm start' in its checkout), or use another host ('svc hosts ls', SVC_API_URL)`;
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return `the name ${host} does not resolve: check the host's URL ('svc hosts ls', SVC_API_URL)`;
    default:
      return `check that svc-server runs at ${origin} and that this machine can reach it ('svc hosts ls', SVC_API_URL)`;
  }
}

/** The server's reasons a 409 is told apart by (domain/errors.ts: the closed list). */
const MERGE_FAILED: ErrorReason = 'Merge failed';
const HEAD_MODIFIED: ErrorReason = 'Head branch was modified';

export function codeForStatus(status: number, reason: string): ApiError['code'] {
  switch (status) {
    case 400:
      return 'validation';
    case 401:
      return 'unauthorized';
    case 403:
      return 'forbidden';
    case 404:
      return 'not_found';
    case 409:
      return reason === MERGE_FAILED ? 'merge_failed' : reason === HEAD_MODIFIED ? 'head_modified' : 'conflict';
    case 413:
      return 'payload_too_large';
    case 429:
      return 'rate_limited';
    case 503:
      return 'unavailable';
    case 504:
      return 'timeout';
    default:
      return status >= 500 ? 'server_error' : 'http_error';
  }
}

export const EXIT_OK = 0;
export const EXIT_FAILED = 1;
export const EXIT_USAGE = 2;

export function exitCodeFor(err: unknown): number {
  return err instanceof UsageError ? EXIT_USAGE : EXIT_FAILED;
}

/** The single stderr line for a failure, without the `error: ` prefix. */
export function describeError(err: unknown): string {
  const withHint = (message: string, hint?: string) => (hint ? `${message}; ${hint}` : message);
  if (err instanceof ApiError) {
    switch (err.code) {
      case 'unauthorized':
        return withHint(`${err.message} (HTTP 401)`, err.hint ?? "run 'svc login' to authenticate");
      case 'merge_failed': {
        const conflicts = Array.isArray(err.body.conflicts) ? (err.body.conflicts as unknown[]).map(String) : [];
        return withHint(
          conflicts.length ? `merge failed: conflicts in ${conflicts.join(', ')}` : `merge failed: ${err.message}`,
          'merge the base branch into the head branch, resolve, push, then try again',
        );
      }
      default:
        return `${err.message} (HTTP ${err.status})`;
    }
  }
  if (err instanceof CliError) return withHint(err.message, err.hint);
  if (err instanceof NetworkError) return withHint(err.message, networkHint(err));
  if (err instanceof Error) return err.message;
  return String(err);
}
