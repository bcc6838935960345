/** The current branch of the working tree, read from `.git/HEAD` (no git process). */
import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';

export async function currentBranch(cwd: string): Promise<string | undefined> {
  let dir = path.resolve(cwd);
  for (;;) {
    const dotGit = path.join(dir, '.git');
    const st = await stat(dotGit).catch(() => undefined);
    if (st) {
      let gitDir = dotGit;
      if (st.isFile()) {
        // A worktree or submodule: `.git` is a file `gitdir: <path>`.
        const m = /^gitdir:\s*(.+)$/m.exec(await readFile(dotGit, 'utf8'));
        if (!m) return undefined;
        gitDir = path.resolve(dir, m[1]!.trim());
      }
      const head = await readFile(path.join(gitDir, 'HEAD'), 'utf8').catch(() => '');
      const ref = /^ref:\s*refs\/heads\/(.+)$/m.exec(head);
      return ref ? ref[1]!.trim() : undefined;
    }
    const parent = path.dirname(dir);
    if (parent === dir) return undefined;
    dir = parent;
  }
}
