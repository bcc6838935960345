import { randomBytes } from 'node:crypto';
import { readFile, rename, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { assertBranchName } from '../../domain/refs.js';
import { repoUnavailable } from './errors.js';
import { fileRepoDir as fileDirOf, localRepoProblem } from './repo-reach.js';
import { localRefReader } from './local-refs.js';
import { openLocalRepo } from './local-repo.js';
import { ensureView, localGitDir, viewPathFor } from './local-view.js';
import type { ProjectRepo } from './port.js';
import { openRemoteRepo, type OpenProjectRepoOptions } from './remote-repo.js';
import { assertRemoteUrl } from './remote-url.js';
import { repoUrlCheck } from './url-policy.js';

export type { OpenProjectRepoOptions } from './remote-repo.js';

/**
 * A project's repository by its URL: a `file://` repository is worked on in place, through
 * the server's view of it (./local-repo.ts, ./local-view.ts); any other URL is a remote
 * reached over the network through a mirror (./remote-repo.ts). Managed repositories are
 * opened by ./managed-repo.ts.
 */
export function openProjectRepo(opts: OpenProjectRepoOptions): ProjectRepo {
  const url = assertRemoteUrl(opts.location.url);
  const dir = fileDirOf(url);
  if (dir === null) return openRemoteRepo(opts);
  let gitDir = dir;
  let view = '';
  const check = opts.policy ? repoUrlCheck(url, opts.policy) : undefined;
  return openLocalRepo({
    gitDir: () => gitDir,
    runDir: () => view,
    refs: localRefReader(url),
    engine: opts.engine,
    logger: opts.logger?.child({ component: 'git-local', project_id: opts.location.projectId }),
    ...(check ? { check: async () => void (await check()) } : {}),
    prepare: async () => {
      const found = localGitDir(dir);
      if (found === null) throw repoUnavailable(localRepoProblem(dir) ?? { repository: dir, cause: 'unreadable' });
      gitDir = found;
      view = viewPathFor(opts.mirrorsDir, opts.location.projectId, found);
      await ensureView(view, found);
    },
  });
}

/**
 * The server's view (./local-view.ts) of a `file://` project's repository, made if
 * missing, with HEAD naming the project's default branch (what a clone checks out): the
 * repository smart HTTP serves to sandboxes for such a project (api/routes/git-http.ts).
 * Null for any other URL. A push received there moves the repository's refs and writes its
 * objects (the view links them) with the server's hooks only, never the repository's.
 */
export async function servedLocalView(url: string, mirrorsDir: string, projectId: string, defaultBranch: string): Promise<string | null> {
  const dir = fileDirOf(assertRemoteUrl(url));
  if (dir === null) return null;
  const gitDir = localGitDir(dir);
  if (gitDir === null) throw repoUnavailable(localRepoProblem(dir) ?? { repository: dir, cause: 'unreadable' });
  const view = viewPathFor(mirrorsDir, projectId, gitDir);
  await ensureView(view, gitDir);
  await setViewHead(view, assertBranchName(defaultBranch));
  return view;
}

/** HEAD is the view's own file (not linked): rewritten, atomically, only when it differs. */
async function setViewHead(view: string, branch: string): Promise<void> {
  const want = `ref: refs/heads/${branch}\n`;
  const head = path.join(view, 'HEAD');
  if ((await readFile(head, 'utf8').catch(() => '')) === want) return;
  const tmp = `${head}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`;
  await writeFile(tmp, want);
  await rename(tmp, head);
}

