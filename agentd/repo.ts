import { mkdir, readdir, stat } from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from '../lib/logger.js';
import { credentialEnv, fetchCloneCredential, remoteNeedsCredential, type CredentialSource } from './credential.js';
import { git, isSafeRefName, runGit } from './git.js';

/**
 * The project checkout in the workspace: clone at boot, re-pull on refresh, and the
 * branch/commit that health reports. Every network git call gets a freshly fetched
 * credential when the remote needs one.
 */
export interface RepoSettings extends CredentialSource {
  workspace: string;
  repoUrl: string;
  branch: string | undefined;
  baseRef: string | undefined;
  /** `credential.helper` for the agent's own git commands (see git-credential-helper.ts). */
  agentCredentialHelper?: string | undefined;
}

export class RepoError extends Error {
  constructor(
    readonly code: 'not_a_repo' | 'not_fast_forward' | 'bad_ref' | 'git',
    message: string,
  ) {
    super(message);
    this.name = 'RepoError';
  }
}

async function networkEnv(s: RepoSettings, log: Logger): Promise<Record<string, string>> {
  if (!remoteNeedsCredential(s.repoUrl)) return {};
  const cred = await fetchCloneCredential(s);
  log.info({ expires_at: cred.expires_at }, 'fetched git clone credential');
  return credentialEnv(cred);
}

async function isEmptyOrMissing(dir: string): Promise<boolean> {
  const entries = await readdir(dir).catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') return [] as string[];
    throw err;
  });
  return entries.length === 0;
}

async function hasGitDir(dir: string): Promise<boolean> {
  return stat(path.join(dir, '.git')).then(
    () => true,
    () => false,
  );
}

function checkRefs(s: RepoSettings): void {
  for (const ref of [s.branch, s.baseRef]) {
    if (ref !== undefined && !isSafeRefName(ref)) throw new RepoError('bad_ref', `refusing ref name ${JSON.stringify(ref)}`);
  }
}

/**
 * Clones `repoUrl` into the workspace and checks out the session branch. The branch is
 * taken from the remote when it exists there; otherwise it is started from the base ref
 * (or the remote's default branch) so the agent still works on the right name.
 */
export async function cloneRepo(s: RepoSettings, log: Logger): Promise<void> {
  checkRefs(s);
  await mkdir(s.workspace, { recursive: true });
  const env = await networkEnv(s, log);
  if (await hasGitDir(s.workspace)) {
    log.info({ workspace: s.workspace }, 'workspace already holds a repository; fetching instead of cloning');
    await git(['fetch', '--prune', 'origin'], { cwd: s.workspace, env });
  } else {
    if (!(await isEmptyOrMissing(s.workspace))) {
      throw new RepoError('git', `workspace ${s.workspace} is not empty and holds no repository`);
    }
    await git(['clone', '--no-checkout', '--origin', 'origin', '--', s.repoUrl, s.workspace], { env });
  }
  await checkoutSessionBranch(s);
  if (s.agentCredentialHelper && remoteNeedsCredential(s.repoUrl)) {
    // Only the helper command is stored, never a credential. The empty entry first
    // resets helpers inherited from system or global config for this repo.
    await runGit(['config', '--local', '--unset-all', 'credential.helper'], { cwd: s.workspace });
    await git(['config', '--local', '--add', 'credential.helper', ''], { cwd: s.workspace });
    await git(['config', '--local', '--add', 'credential.helper', s.agentCredentialHelper], { cwd: s.workspace });
  }
}

async function remoteRefExists(cwd: string, ref: string): Promise<boolean> {
  const r = await runGit(['rev-parse', '--verify', '--quiet', `refs/remotes/origin/${ref}^{commit}`], { cwd });
  return r.code === 0;
}

async function checkoutSessionBranch(s: RepoSettings): Promise<void> {
  const cwd = s.workspace;
  if (!s.branch) {
    // No session branch: the remote's default branch, as a plain clone would have it.
    const head = await runGit(['symbolic-ref', '--quiet', '--short', 'refs/remotes/origin/HEAD'], { cwd });
    const def = head.code === 0 ? head.stdout.trim().replace(/^origin\//, '') : s.baseRef;
    if (def && (await remoteRefExists(cwd, def))) {
      await git(['checkout', '-B', def, '--track', `origin/${def}`], { cwd });
    }
    return;
  }
  if (await remoteRefExists(cwd, s.branch)) {
    await git(['checkout', '-B', s.branch, '--track', `origin/${s.branch}`], { cwd });
    return;
  }
  const start = s.baseRef && (await remoteRefExists(cwd, s.baseRef)) ? `origin/${s.baseRef}` : 'origin/HEAD';
  const startOk = (await runGit(['rev-parse', '--verify', '--quiet', `${start}^{commit}`], { cwd })).code === 0;
  await git(startOk ? ['checkout', '-B', s.branch, '--no-track', start] : ['checkout', '--orphan', s.branch], { cwd });
  if (startOk) await runGit(['branch', `--set-upstream-to=origin/${s.branch}`], { cwd });
}

/**
 * Re-pulls the session branch from origin: fetch, then fast-forward only. Local commits
 * that diverged from the remote are never thrown away; that case is a RepoError.
 */
export async function pullSessionBranch(s: RepoSettings, log: Logger): Promise<{ before: string | null; after: string | null }> {
  checkRefs(s);
  const cwd = s.workspace;
  if (!(await hasGitDir(cwd))) throw new RepoError('not_a_repo', `no repository in ${cwd}`);
  const before = (await repoStatus(cwd)).commit;
  const branch = s.branch ?? (await repoStatus(cwd)).branch;
  if (!branch) throw new RepoError('bad_ref', 'no session branch is checked out');
  const env = await networkEnv(s, log);
  try {
    await git(['fetch', 'origin', `+refs/heads/${branch}:refs/remotes/origin/${branch}`], { cwd, env });
  } catch (err) {
    throw new RepoError('git', (err as Error).message);
  }
  const merge = await runGit(['merge', '--ff-only', `refs/remotes/origin/${branch}`], { cwd });
  if (merge.code !== 0) {
    throw new RepoError('not_fast_forward', `the local ${branch} cannot be fast-forwarded to origin/${branch}`);
  }
  const after = (await repoStatus(cwd)).commit;
  return { before, after };
}

export interface RepoStatus {
  branch: string | null;
  commit: string | null;
}

export async function repoStatus(cwd: string): Promise<RepoStatus> {
  // Without this check git would walk up and report some enclosing repository.
  if (!(await hasGitDir(cwd))) return { branch: null, commit: null };
  const [b, c] = await Promise.all([
    runGit(['symbolic-ref', '--quiet', '--short', 'HEAD'], { cwd, timeoutMs: 5_000 }),
    runGit(['rev-parse', '--verify', '--quiet', 'HEAD'], { cwd, timeoutMs: 5_000 }),
  ]);
  return {
    branch: b.code === 0 ? b.stdout.trim() || null : null,
    commit: c.code === 0 ? c.stdout.trim() || null : null,
  };
}

