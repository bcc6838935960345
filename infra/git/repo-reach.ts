import { statSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { isGitCommandError, runGit, type GitCommandError } from '../../lib/git-run.js';
import type { GitAuth } from './credentials.js';
import { localGitDir } from './local-view.js';

/**
 * Why a project's repository cannot be reached, in words a person can act on: checked when
 * a project is created (a 400 naming the path or host) and named again by every later
 * failure (a repository deleted afterwards), so "cannot be reached" always says where and why.
 */
export type RepoCause = 'not found' | 'not a git repository' | 'auth refused' | 'unreachable' | 'no answer in time' | 'unreadable';

export interface RepoProblem {
  /** The path of a `file://` repository, else the URL (never with credentials). */
  repository: string;
  /** The host of a remote URL; absent for a path. */
  host?: string;
  cause: RepoCause;
}

/** "/srv/x.git: not found" or "https://h/x.git (host h): auth refused". */
export function describeRepoProblem(p: RepoProblem): string {
  return `${p.repository}${p.host ? ` (host ${p.host})` : ''}: ${p.cause}`;
}

/** The directory a `file://` URL names, else null (any other transport). */
export function fileRepoDir(url: string): string | null {
  if (!/^file:/i.test(url)) return null;
  try {
    return path.resolve(fileURLToPath(url));
  } catch {
    return null;
  }
}

/** What a URL names for a person: the path of a file:// URL, else the URL without credentials. */
export function repoWhere(url: string): { repository: string; host?: string } {
  const dir = fileRepoDir(url);
  if (dir !== null) return { repository: dir };
  try {
    const u = new URL(url);
    u.password = '';
    return { repository: u.toString(), host: u.hostname };
  } catch {
    // scp-like `user@host:path`: the host is between '@' and ':'.
    const m = /^(?:[^@/]+@)?([^:/]+):/.exec(url);
    return m ? { repository: url, host: m[1]! } : { repository: url };
  }
}

/** Why the directory is not a repository git can open, or null when it is one. */
export function localRepoProblem(dir: string): RepoProblem | null {
  if (localGitDir(dir) !== null) return null;
  let exists = false;
  try {
    exists = statSync(dir).isDirectory();
  } catch {
    exists = false;
  }
  return { repository: dir, cause: exists ? 'not a git repository' : 'not found' };
}

/**
 * The cause of a failed network git call. git says it only in words (exit 128 for all),
 * so this reads its message for the person's benefit; no decision but the wording
 * depends on it.
 */
export function causeOfGitFailure(e: GitCommandError): RepoCause {
  if (e.signal) return 'no answer in time';
  const s = e.stderr;
  if (/authentication failed|could not read (username|password)|terminal prompts disabled|permission denied \(|returned error: 40[13]|host key verification failed|access denied|http 40[13]/i.test(s)) return 'auth refused';
  if (/not found|returned error: 404|does not appear to be a git repository|no such file or directory|does not exist/i.test(s)) return 'not found';
  return 'unreachable';
}

/**
 * One `ls-remote` of the default branch, bounded by `timeoutMs`: null when the remote
 * answered (whether or not the branch exists yet), else what went wrong. `connect` are the
 * policy's `-c` options (no redirects, no proxy, pinned addresses), `auth` the credentials.
 */
export async function probeRemote(url: string, o: { auth: GitAuth; connect: string[]; timeoutMs: number; branch: string }): Promise<RepoProblem | null> {
  const where = repoWhere(url);
  // Outside any repository: nothing of the server's own checkout is read.
  const cwd = await mkdtemp(path.join(os.tmpdir(), 'svc-ls-remote-'));
  try {
    await runGit([...o.auth.configArgs, ...o.connect, 'ls-remote', '--heads', '--end-of-options', url, `refs/heads/${o.branch}`], {
      cwd,
      env: o.auth.env,
      secrets: o.auth.secrets,
      timeoutMs: o.timeoutMs,
    });
    return null;
  } catch (e) {
    if (!isGitCommandError(e)) throw e;
    return { ...where, cause: causeOfGitFailure(e) };
  } finally {
    await rm(cwd, { recursive: true, force: true });
  }
}
