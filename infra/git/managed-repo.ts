import { mkdir, rm, stat } from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { DomainError } from '../../domain/errors.js';
import { assertBranchName } from '../../domain/refs.js';
import { runGit } from '../../lib/git-run.js';
import type { Logger } from '../../lib/logger.js';
import { localRefReader } from './local-refs.js';
import { openLocalRepo } from './local-repo.js';
import type { GitEngine, ProjectRepo } from './port.js';

/**
 * The `managed` backend: a bare repository this service hosts at
 * `<repos dir>/<project_id>.git` and serves over smart HTTP (api/routes/git-http.ts),
 * worked on in place (./local-repo.ts). Its config is the server's (written here), it has
 * no `hooks/` directory, and the one hook that runs, pre-receive, is given on receive-pack's
 * command line by the smart HTTP route; no other git the server runs runs a hook.
 */
const PROJECT_ID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

export function managedRepoPath(reposDir: string, projectId: string): string {
  if (!PROJECT_ID.test(projectId)) throw new DomainError('validation', 'Validation failed', 'Invalid project id for a managed repository.');
  return path.join(path.resolve(reposDir), `${projectId}.git`);
}

/** `SVC_REPOS_DIR`, else `<data dir>/repos`. */
export function reposDirOf(config: { dataDir: string; SVC_REPOS_DIR?: string | undefined }): string {
  return path.resolve(config.SVC_REPOS_DIR ?? path.join(config.dataDir, 'repos'));
}

/**
 * Creates the bare repository (no template: no sample hooks; HEAD names the default
 * branch so a clone checks it out). `receive.fsckObjects` refuses corrupt objects in a
 * push. Idempotent: `git init` on an existing repository changes nothing.
 */
export async function createManagedRepo(repoPath: string, defaultBranch: string): Promise<void> {
  assertBranchName(defaultBranch, 'default_branch');
  await mkdir(path.dirname(repoPath), { recursive: true });
  await runGit(['init', '--bare', '--quiet', '--template=', `--initial-branch=${defaultBranch}`, '--', repoPath]);
  for (const [key, value] of [
    ['receive.fsckObjects', 'true'],
    ['uploadpack.allowFilter', 'true'],
    ['core.logAllRefUpdates', 'true'],
    ['gc.autoDetach', 'false'],
  ] as const) {
    await runGit(['config', key, value], { cwd: repoPath });
  }
}

export async function removeManagedRepo(repoPath: string): Promise<void> {
  await rm(repoPath, { recursive: true, force: true });
}

export async function managedRepoExists(repoPath: string): Promise<boolean> {
  const st = await stat(path.join(repoPath, 'objects')).catch(() => undefined);
  return !!st?.isDirectory();
}

export function openManagedRepo(opts: { repoPath: string; engine: GitEngine; logger?: Logger; projectId: string }): ProjectRepo {
  return openLocalRepo({
    gitDir: opts.repoPath,
    runDir: opts.repoPath,
    refs: localRefReader(pathToFileURL(opts.repoPath).href),
    engine: opts.engine,
    logger: opts.logger?.child({ component: 'git-managed', project_id: opts.projectId }),
  });
}
