/**
 * Every rule violation in the system is one of these codes. Each surface maps a code to
 * its own vocabulary in exactly one place: HTTP statuses in api/errors.ts, exit codes in
 * cli/errors.ts. Nothing else inspects messages.
 */
export const ERROR_CODES = [
  'validation', 'unauthorized', 'forbidden', 'agent_cannot_merge', 'agent_forbidden', 'not_found', 'gone', 'conflict', 'merge_failed',
  'head_modified', 'concurrency', 'no_required_checks', 'merge_queue_enabled', 'payload_too_large', 'rate_limited', 'unavailable', 'timeout',
] as const satisfies readonly ErrorCode[];

export type ErrorCode =
  | 'validation' // 400: input breaks a rule (bad ref name, empty title, head == base)
  | 'unauthorized' // 401: no or unknown credential
  | 'forbidden' // 403: credential valid but not allowed here
  | 'agent_cannot_merge' // 403: an agent-grade credential asked to merge (a person merges)
  | 'agent_forbidden' // 403: an agent-grade credential asked for something only a person may do
  | 'not_found' // 404
  | 'gone' // 410: a one-time thing (a login link) was used or has expired
  | 'conflict' // 409: state does not allow the command (merge a closed CR ...)
  | 'merge_failed' // 409: the merge has conflicts
  | 'head_modified' // 409: expected_head_sha no longer matches
  | 'concurrency' // 409: optimistic concurrency on a stream, or a moved ref
  | 'no_required_checks' // 422: merge-when-green asked where nothing is required (no checks, no required statuses)
  | 'merge_queue_enabled' // 409: a direct merge where the manifest in force turns the merge queue on (merge when green instead)
  | 'payload_too_large' // 413
  | 'rate_limited' // 429
  | 'unavailable' // 503: a dependency (repo, runtime) cannot be reached
  | 'timeout'; // 504: a dependency did not answer within the request's budget

/**
 * Every `reason` (the contract's `error` field: short, stable, shown to people) in one
 * closed list, so a reason compared anywhere is one the type knows, and a typo does not
 * compile. A new one is added here.
 */
export const ERROR_REASONS = [
  'Validation failed', 'Bad request', 'Bad checkpoint', 'Payload too large',
  'Unauthorized', 'Forbidden', 'CSRF check failed', 'Cross-site request refused', 'Invalid login code', 'Wrong code', 'Login link used or expired',
  'Not found', 'No credential', 'No repository', 'Unknown model',
  'Conflict', 'Concurrency conflict', 'Merge failed', 'Head branch was modified', 'Slug taken', 'No required checks', 'Merge queue enabled',
  'No origin session', 'Origin session gone', 'Head is not the session branch', 'Too many rounds', 'Nothing to send',
  'Session not running', 'Refresh refused', 'Refused', 'Rejected by runtime', 'Method not allowed', 'No model', 'Merge in progress',
  'Too many sessions', 'Too many logins', 'Too many failed attempts', 'Too many requests', 'Too many calls',
  'Unavailable', 'Repository unavailable', 'Repository timeout', 'Push rejected', 'Merge pending', 'Merge outcome unknown', 'Job failed',
  'Sandbox unavailable', 'Sessions unavailable', 'Spawn failed', 'No upstream', 'Upstream unreachable', 'Budget spent', 'Project budget exceeded', 'Account budget exceeded', 'Unpriced model', 'Branch not created', 'Branch not cut',
  'Repository URL not allowed', 'URL not allowed', 'Repository not reachable', 'Bad gateway', 'Invalid request', 'Internal error',
] as const;

export type ErrorReason = (typeof ERROR_REASONS)[number];

const CODES: ReadonlySet<string> = new Set(ERROR_CODES);
const REASONS: ReadonlySet<string> = new Set(ERROR_REASONS);
export const isErrorCode = (s: unknown): s is ErrorCode => typeof s === 'string' && CODES.has(s);
export const isErrorReason = (s: unknown): s is ErrorReason => typeof s === 'string' && REASONS.has(s);

export interface ErrorIssue {
  path: string;
  message: string;
}

export class DomainError extends Error {
  readonly code: ErrorCode;
  /** Short machine-stable reason, used as the contract's `error` field. */
  readonly reason: ErrorReason;
  /** Extra fields that help the caller (e.g. `conflicts`, `issues`). */
  readonly details: Record<string, unknown>;

  constructor(code: ErrorCode, reason: ErrorReason, message: string, details: Record<string, unknown> = {}) {
    super(message);
    this.name = 'DomainError';
    this.code = code;
    this.reason = reason;
    this.details = details;
  }
}

/** A 400 always carries `issues` (contracts.md): when no field is named, one issue on the request as a whole. */
export const validationError = (message: string, issues: ErrorIssue[] = []): DomainError =>
  new DomainError('validation', 'Validation failed', message, { issues: issues.length ? issues : [{ path: '(request)', message }] });

export const notFound = (what: string): DomainError => new DomainError('not_found', 'Not found', `${what} not found.`);

export const isDomainError = (e: unknown): e is DomainError => e instanceof DomainError;

/** 503 or 429 with `Retry-After`: the error body carries `retry_after` (seconds), api/errors.ts sets the header. */
export const retryLater = (code: 'unavailable' | 'rate_limited' | 'conflict', reason: ErrorReason, message: string, retryAfterS: number): DomainError =>
  new DomainError(code, reason, message, { retry_after: Math.max(1, Math.ceil(retryAfterS)) });

/**
 * A DomainError back from its wire form (a job's outcome, another process's answer): a
 * code or reason this build does not know becomes a plain 503, never an unchecked cast.
 */
export function domainErrorFrom(e: { code: string; reason: string; message: string; details?: Record<string, unknown> | undefined }): DomainError {
  if (!isErrorCode(e.code)) return new DomainError('unavailable', 'Unavailable', e.message, e.details ?? {});
  return new DomainError(e.code, isErrorReason(e.reason) ? e.reason : 'Unavailable', e.message, e.details ?? {});
}
