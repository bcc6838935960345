import { DomainError } from '../../domain/errors.js';
import type { GitCommandError } from '../../lib/git-run.js';
import { describeRepoProblem, type RepoProblem } from './repo-reach.js';


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

/**
 * The project's repository cannot be used: names the path or host and why when known
 * (./repo-reach.ts), so a person knows what to fix (restore the path, the credentials ...).
 */
export const repoUnavailable = (problem?: RepoProblem, cause?: GitCommandError): DomainError =>
  new DomainError(
    'unavailable',
    'Repository unavailable',
    problem
      ? `The project repository cannot be reached: ${describeRepoProblem(problem)}. Restore it, or point the project at another repository.`
      : 'The project repository cannot be reached.',
    { ...(cause ? { git_exit_code: cause.exitCode } : {}), ...(problem ? { repository: problem.repository, cause: problem.cause } : {}) },
  );
