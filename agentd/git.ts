import { spawn } from 'node:child_process';

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

/**
 * Runs git with an argument vector (never a shell string). Outcomes are read from the
 * exit code; stdout/stderr are returned for logging and machine output only.
 */
export function runGit(args: string[], opts: GitOptions = {}): Promise<GitResult> {
  return new Promise((resolve) => {
    const child = spawn('git', args, {
      cwd: opts.cwd,
      env: { ...process.env, GIT_TERMINAL_PROMPT: '0', ...opts.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 300_000);
    child.on('error', (err) => {
      clearTimeout(timer);
      resolve({ code: 127, stdout, stderr: stderr + String(err) });
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code: code ?? (signal ? 128 : 1), stdout, stderr });
    });
  });
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

/** Ref names that reach git as arguments must be refs, never options. */
export function isSafeRefName(name: string): boolean {
  return (
    name.length > 0 &&
    name.length <= 255 &&
    !name.startsWith('-') &&
    !name.startsWith('/') &&
    !name.endsWith('/') &&
    !name.endsWith('.lock') &&
    !name.endsWith('.') &&
    !name.includes('..') &&
    !name.includes('@{') &&
    !name.includes('//') &&
    // eslint-disable-next-line no-control-regex
    !/[\x00-\x20\x7f~^:?*[\\]/.test(name)
  );
}
