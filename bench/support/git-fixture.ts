/**
 * A small real repository for API benches, built with the git CLI: a bare "remote" (what
 * a project's repo_url points at) and a scratch clone to commit in, as an agent would.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { runGit } from '../../lib/git-run.js';

const IDENTITY = {
  GIT_AUTHOR_NAME: 'Bench',
  GIT_AUTHOR_EMAIL: 'bench@example.test',
  GIT_COMMITTER_NAME: 'Bench',
  GIT_COMMITTER_EMAIL: 'bench@example.test',
};

export interface BenchRepo {
  root: string;
  bare: string;
  url: string;
  /** git in the scratch clone. */
  git(args: string[]): Promise<string>;
  /** git in the bare remote. */
  bareGit(args: string[]): Promise<string>;
  /** Commits `files` on `branch`, created from `from` (a branch of the remote) when new, and pushes it. */
  commit(branch: string, files: Record<string, string>, from?: string): Promise<string>;
  /** Several new branches, each one commit on `from` touching its own file, pushed at once. */
  branches(names: string[], from: string): Promise<void>;
  tip(branch: string): Promise<string>;
  cleanup(): Promise<void>;
}

/** `opts.bare`: an existing empty bare repository to use as the remote (a managed project's), instead of a new one. */
export async function benchRepo(prefix = 'svc-bench-repo-', opts: { bare?: string } = {}): Promise<BenchRepo> {
  const root = await mkdtemp(path.join(os.tmpdir(), prefix));
  const bare = opts.bare ?? path.join(root, 'origin.git');
  const work = path.join(root, 'work');
  const run = async (cwd: string, args: string[]) => (await runGit(args, { cwd, env: IDENTITY })).stdout.toString('utf8').trim();
  if (!opts.bare) await run(root, ['init', '--bare', '--quiet', '-b', 'main', bare]);
  await mkdir(work);
  await run(work, ['init', '--quiet', '-b', 'main']);
  await run(work, ['remote', 'add', 'origin', bare]);
  // A small project: a few dozen files in a few directories.
  for (let d = 0; d < 5; d++) {
    await mkdir(path.join(work, `src${d}`), { recursive: true });
    for (let f = 0; f < 8; f++) {
      await writeFile(path.join(work, `src${d}`, `file${f}.ts`), Array.from({ length: 40 }, (_, l) => `export const v${l} = ${d * 1000 + f * 40 + l};`).join('\n') + '\n');
    }
  }
  await writeFile(path.join(work, 'README.md'), '# bench fixture\n');
  await run(work, ['add', '-A']);
  await run(work, ['commit', '--quiet', '-m', 'initial']);
  await run(work, ['push', '--quiet', 'origin', 'main']);

  const repo: BenchRepo = {
    root,
    bare,
    url: pathToFileURL(bare).href,
    git: (args) => run(work, args),
    bareGit: (args) => run(bare, args),
    async commit(branch, files, from = 'main') {
      await run(work, ['fetch', '--quiet', 'origin']);
      const exists = (await run(bare, ['branch', '--list', branch])) !== '';
      await run(work, ['checkout', '--quiet', '-B', branch, `origin/${exists ? branch : from}`]);
      for (const [file, content] of Object.entries(files)) {
        await mkdir(path.dirname(path.join(work, file)), { recursive: true });
        await writeFile(path.join(work, file), content);
      }
      await run(work, ['add', '-A']);
      await run(work, ['commit', '--quiet', '-m', `bench: ${branch}`]);
      await run(work, ['push', '--quiet', 'origin', `HEAD:refs/heads/${branch}`]);
      return run(work, ['rev-parse', 'HEAD']);
    },
    async branches(names, from) {
      await run(work, ['fetch', '--quiet', 'origin']);
      for (const name of names) {
        await run(work, ['checkout', '--quiet', '-B', name, `origin/${from}`]);
        const file = path.join(work, 'changes', `${name.replace(/[^a-zA-Z0-9_-]/g, '_')}.txt`);
        await mkdir(path.dirname(file), { recursive: true });
        await writeFile(file, `change on ${name}\n`);
        await run(work, ['add', '-A']);
        await run(work, ['commit', '--quiet', '-m', `bench: ${name}`]);
      }
      for (let i = 0; i < names.length; i += 200) {
        await run(work, ['push', '--quiet', 'origin', ...names.slice(i, i + 200).map((n) => `refs/heads/${n}:refs/heads/${n}`)]);
      }
    },
    tip: (branch) => run(bare, ['rev-parse', '--verify', `refs/heads/${branch}`]),
    cleanup: () => rm(root, { recursive: true, force: true }),
  };
  return repo;
}
