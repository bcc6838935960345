import { createHash, randomBytes } from 'node:crypto';
import { statSync } from 'node:fs';
import { mkdir, rename, rm, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { DomainError } from '../../domain/errors.js';

/**
 * A view of a repository the server does not own (a `file://` project): a git directory
 * the server creates, with its own `config` and `HEAD`, no `hooks/` and no `info/`, whose
 * `objects`, `refs`, `packed-refs`, `logs` and `shallow` are symlinks into the
 * repository. Every git process the server runs for that project runs on the view, so it
 * reads the repository's objects and refs (and takes their lock files next to them, as the
 * repository's own git does) but never its config, its hooks or its `info/attributes`: no
 * `core.fsmonitor`, filter, merge or diff driver, `include.path`, alternate-refs command or
 * promisor remote of the repository can start a process on this machine, however the
 * repository's config changes between two calls (nothing to re-check, so nothing to race).
 * libgit2 (which runs no hooks or configured commands anyway) opens the view too.
 *
 * The view is keyed by project and by the repository's directory, made once (a temporary
 * directory renamed into place, so two processes making it at once agree), and is a cache:
 * deleting it costs one re-creation.
 */
const LINKED = ['objects', 'refs', 'packed-refs', 'logs', 'shallow'] as const;

const VIEW_CONFIG = '[core]\n\trepositoryformatversion = 0\n\tfilemode = true\n\tbare = true\n';

const PROJECT_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;

/**
 * The git directory of a local repository at `dir`: `dir` itself when it is one (a bare
 * repository, or a `.git` directory), else `dir/.git` when that is a directory; null
 * otherwise (a `.git` file of a linked worktree or submodule is not served).
 */
export function localGitDir(dir: string): string | null {
  for (const candidate of [dir, path.join(dir, '.git')]) {
    const head = statSync(path.join(candidate, 'HEAD'), { throwIfNoEntry: false });
    const objects = statSync(path.join(candidate, 'objects'), { throwIfNoEntry: false });
    const refs = statSync(path.join(candidate, 'refs'), { throwIfNoEntry: false });
    if (head?.isFile() && objects?.isDirectory() && refs?.isDirectory()) return candidate;
  }
  return null;
}

export function viewPathFor(viewsDir: string, projectId: string, gitDir: string): string {
  if (!PROJECT_ID.test(projectId) || projectId.includes('..')) {
    throw new DomainError('validation', 'Validation failed', 'Invalid project id for a repository view.');
  }
  const key = createHash('sha256').update(path.resolve(gitDir)).digest('hex').slice(0, 16);
  return path.join(path.resolve(viewsDir), `${projectId}-${key}.view.git`);
}

/** Creates the view of `gitDir` at `view` unless it is there. */
export async function ensureView(view: string, gitDir: string): Promise<void> {
  if (statSync(path.join(view, 'config'), { throwIfNoEntry: false })?.isFile()) return;
  await mkdir(path.dirname(view), { recursive: true });
  const tmp = `${view}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`;
  try {
    await mkdir(tmp, { mode: 0o700 });
    await writeFile(path.join(tmp, 'HEAD'), 'ref: refs/heads/main\n');
    await writeFile(path.join(tmp, 'config'), VIEW_CONFIG);
    for (const name of LINKED) await symlink(path.join(path.resolve(gitDir), name), path.join(tmp, name));
    await rename(tmp, view);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    // Another process made it first: theirs is the same.
    if (code !== 'EEXIST' && code !== 'ENOTEMPTY') throw err;
  } finally {
    await rm(tmp, { recursive: true, force: true });
  }
}
