import { runGit as runGitProcess } from '../lib/git-run.js';
import { isGitCommandError } from '../lib/git-run.js';

/**
 * The daemon's git calls go through the server's one git runner (lib/git-run.ts): an
 * argument vector, never a shell, and an environment built from scratch (no host git
 * config, no prompts, C locale, nothing of the parent's GIT_* variables). The daemon adds
 * only what a sandbox's network may need to reach the remote (proxies, CA bundles) and
 * the per-call variables (credential helper input). Outcomes are read from exit codes.
 */
export interface GitResult {
  code: number;
  stdout: string;
  stderr: string;
}

export interface GitOptions {
  cwd?: string;
  /** Extra variables for this git child only (credential helper input lives here). */
  env?: Record<string, string>;
  timeoutMs?: number;
}

/** Variables of the daemon's own environment that git may need to reach a remote. */
const NETWORK_ENV = ['HTTP_PROXY', 'HTTPS_PROXY', 'NO_PROXY', 'ALL_PROXY', 'http_proxy', 'https_proxy', 'no_proxy', 'all_proxy', 'SSL_CERT_FILE', 'SSL_CERT_DIR', 'GIT_SSL_CAINFO'] as const;

function networkEnv(): Record<string, string> {
  const out: Record<string, string> = {};
  for (const k of NETWORK_ENV) {
    const v = process.env[k];
    if (v !== undefined) out[k] = v;
  }
  return out;
}

/** Every exit code is an outcome here: callers read `code`. */
const ANY_EXIT = Array.from({ length: 256 }, (_, i) => i);

export async function runGit(args: string[], opts: GitOptions = {}): Promise<GitResult> {
  try {
    const r = await runGitProcess(args, {
      ...(opts.cwd !== undefined ? { cwd: opts.cwd } : {}),
      env: { ...networkEnv(), ...opts.env },
      timeoutMs: opts.timeoutMs ?? 300_000,
      okCodes: ANY_EXIT,
      input: '',
    });
    return { code: r.code, stdout: r.stdout.toString('utf8'), stderr: r.stderr };
  } catch (err) {
    // Killed (timeout: a signal) or not started at all (git missing).
    if (isGitCommandError(err)) return { code: err.exitCode ?? 128, stdout: '', stderr: err.stderr || err.message };
    return { code: 127, stdout: '', stderr: String(err) };
  }
}

export class GitError extends Error {
  constructor(
    readonly args: string[],
    readonly result: GitResult,
  ) {
    super(`git ${args[0] ?? ''} failed with exit code ${result.code}: ${result.stderr.trim().split('\n').slice(-3).join(' | ')}`);
    this.name = 'GitError';
  }
}

export async function git(args: string[], opts: GitOptions = {}): Promise<string> {
  const r = await runGit(args, opts);
  if (r.code !== 0) throw new GitError(args, r);
  return r.stdout.trim();
}

/** Branch names that reach git as arguments: the server's one validator (domain/refs.ts). */
export { isValidBranchName as isSafeRefName } from '../domain/refs.js';
