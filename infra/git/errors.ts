import { DomainError } from '../../domain/errors.js';

/**
 * A git process that ended with an exit code the caller did not expect. Carries the
 * evidence (argv, exit code, stderr) with credentials already removed, so it can be
 * logged as is. Callers branch on `exitCode`, never on `stderr`.
 */
export class GitCommandError extends Error {
  readonly exitCode: number | null;
  readonly signal: NodeJS.Signals | null;
  readonly args: readonly string[];
  readonly stderr: string;

  constructor(args: readonly string[], exitCode: number | null, signal: NodeJS.Signals | null, stderr: string) {
    const what = signal ? `signal ${signal}` : `exit code ${exitCode}`;
    const firstLine = stderr.trim().split('\n')[0] ?? '';
    super(`git ${args[0] ?? ''} failed with ${what}${firstLine ? `: ${firstLine}` : ''}`);
    this.name = 'GitCommandError';
    this.exitCode = exitCode;
    this.signal = signal;
    this.args = args;
    this.stderr = stderr;
  }
}

export const isGitCommandError = (e: unknown): e is GitCommandError => e instanceof GitCommandError;

export const mergeFailed = (conflicts: string[]): DomainError =>
  new DomainError('merge_failed', 'Merge failed', `The merge has conflicts in ${conflicts.length} file(s).`, {
    conflicts,
  });

export const unrelatedHistories = (): DomainError =>
  new DomainError('validation', 'Validation failed', 'The branches have no common history; they cannot be merged.', {
    issues: [{ path: 'head_ref', message: 'unrelated histories' }],
  });

export const refMoved = (ref: string): DomainError =>
  new DomainError('concurrency', 'Concurrency conflict', `${ref} moved while the operation ran; retry.`);

export const headModified = (expected: string, actual: string | null): DomainError =>
  new DomainError('head_modified', 'Head branch was modified', 'The head branch moved since it was last read.', {
    expected_head_sha: expected,
    head_sha: actual,
  });

export const repoUnavailable = (cause?: GitCommandError): DomainError =>
  new DomainError(
    'unavailable',
    'Repository unavailable',
    'The project repository cannot be reached.',
    cause ? { git_exit_code: cause.exitCode } : {},
  );
