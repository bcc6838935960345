import { DomainError } from './errors.js';

/**
 * Ref-name safety. Every branch name and object id that reaches a git argv goes through
 * here first, so user input can never become an option or walk out of `refs/heads/`.
 *
 * `isValidBranchName` follows `git check-ref-format --branch` (refs.c
 * check_refname_format on `refs/heads/<name>`, plus the --branch rules: no leading `-`,
 * not `HEAD`), and is stricter in two places: the bare name `@` (legal for git, but it
 * means HEAD in revision syntax) and names longer than `MAX_BRANCH_NAME` bytes.
 */
export const MAX_BRANCH_NAME = 255;

// Control characters, DEL, and the characters git reserves for revision syntax.
// eslint-disable-next-line no-control-regex
const FORBIDDEN_CHARS = /[\x00-\x20\x7f~^:?*[\\]/;

export function branchNameProblem(name: string): string | null {
  if (typeof name !== 'string' || name.length === 0) return 'must not be empty';
  if (Buffer.byteLength(name, 'utf8') > MAX_BRANCH_NAME) return `must be at most ${MAX_BRANCH_NAME} bytes`;
  if (name.startsWith('-')) return "must not start with '-'";
  if (name === 'HEAD') return "must not be 'HEAD'";
  if (name === '@') return "must not be '@'";
  // A branch's name, never a full ref: `refs/svc/…` (the server's hidden refs, e.g. a paused session's wip) must not be reachable as `refs/heads/refs/svc/…` look-alikes either.
  if (name.startsWith('refs/')) return "must be a branch's name, not a ref (no leading 'refs/')";
  if (FORBIDDEN_CHARS.test(name)) return 'must not contain spaces, control characters or any of ~ ^ : ? * [ \\';
  if (name.includes('..')) return "must not contain '..'";
  if (name.includes('@{')) return "must not contain '@{'";
  if (name.endsWith('.')) return "must not end with '.'";
  for (const component of name.split('/')) {
    if (component.length === 0) return "must not start or end with '/' or contain '//'";
    if (component.startsWith('.')) return "no path component may start with '.'";
    if (component.endsWith('.lock')) return "no path component may end with '.lock'";
  }
  return null;
}

export const isValidBranchName = (name: string): boolean => branchNameProblem(name) === null;

export function assertBranchName(name: string, field = 'ref'): string {
  const problem = branchNameProblem(name);
  if (problem !== null) {
    throw new DomainError('validation', 'Validation failed', `Invalid branch name: ${problem}.`, {
      issues: [{ path: field, message: `invalid branch name: ${problem}` }],
    });
  }
  return name;
}

/** Full object ids only (sha1 or sha256), lowercase: never abbreviations or revision syntax. */
const SHA = /^(?:[0-9a-f]{40}|[0-9a-f]{64})$/;

export const isSha = (value: string): boolean => typeof value === 'string' && SHA.test(value);

export function assertSha(value: string, field = 'sha'): string {
  if (!isSha(value)) {
    throw new DomainError('validation', 'Validation failed', `Invalid commit id for ${field}.`, {
      issues: [{ path: field, message: 'must be a full lowercase hex object id' }],
    });
  }
  return value;
}

