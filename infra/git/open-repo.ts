import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { repoUnavailable } from './errors.js';
import { localRefReader } from './local-refs.js';
import { openLocalRepo } from './local-repo.js';
import { ensureView, localGitDir, viewPathFor } from './local-view.js';
import type { ProjectRepo } from './port.js';
import { openRemoteRepo, type OpenProjectRepoOptions } from './remote-repo.js';
import { assertRemoteUrl } from './remote-url.js';
import { checkRepoUrl } from './url-policy.js';

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
  const policy = opts.policy;
  return openLocalRepo({
    gitDir: () => gitDir,
    runDir: () => view,
    refs: localRefReader(url),
    engine: opts.engine,
    logger: opts.logger?.child({ component: 'git-local', project_id: opts.location.projectId }),
    ...(policy ? { check: async () => void (await checkRepoUrl(url, policy)) } : {}),
    prepare: async () => {
      const found = localGitDir(dir);
      if (found === null) throw repoUnavailable();
      gitDir = found;
      view = viewPathFor(opts.mirrorsDir, opts.location.projectId, found);
      await ensureView(view, found);
    },
  });
}

/** The directory a `file://` URL names, else null (any other transport). */
function fileDirOf(url: string): string | null {
  if (!/^file:/i.test(url)) return null;
  try {
    return path.resolve(fileURLToPath(url));
  } catch {
    return null;
  }
}
