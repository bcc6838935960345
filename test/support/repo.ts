/**
 * Fixture repositories built with real git: a bare "remote" plus a scratch clone to make
 * commits in, so tests push exactly as an agent in a sandbox would.
 */
import { execFileSync } from 'node:child_process';
import { mkdtemp, rm, writeFile, mkdir } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';

export interface FixtureRepo {
  /** file:// URL of the bare remote. */
  url: string;
  bare: string;
  work: string;
  git(...args: string[]): string;
  /** Commit `files` on `branch` (created from `from` when new) and push it. Returns the sha. */
  commit(branch: string, files: Record<string, string | null>, opts?: { from?: string; message?: string }): Promise<string>;
  tip(branch: string): string | null;
  cleanup(): Promise<void>;
}

const env = {
  ...process.env,
  GIT_AUTHOR_NAME: 'Test',
  GIT_AUTHOR_EMAIL: 'test@example.test',
  GIT_COMMITTER_NAME: 'Test',
  GIT_COMMITTER_EMAIL: 'test@example.test',
  GIT_CONFIG_GLOBAL: '/dev/null',
  GIT_CONFIG_NOSYSTEM: '1',
};

export async function fixtureRepo(): Promise<FixtureRepo> {
  const root = await mkdtemp(path.join(os.tmpdir(), 'svc-repo-'));
  const bare = path.join(root, 'remote.git');
  const work = path.join(root, 'work');
  const run = (cwd: string, args: string[]) => execFileSync('git', args, { cwd, env, encoding: 'utf8' }).trim();
  run(root, ['init', '-q', '--bare', '-b', 'main', bare]);
  run(root, ['init', '-q', '-b', 'main', work]);
  run(work, ['remote', 'add', 'origin', bare]);
  await writeFile(path.join(work, 'README.md'), 'fixture\n');
  run(work, ['add', '-A']);
  run(work, ['commit', '-q', '-m', 'initial']);
  run(work, ['push', '-q', 'origin', 'main']);
  const repo: FixtureRepo = {
    url: `file://${bare}`,
    bare,
    work,
    git: (...args) => run(work, args),
    async commit(branch, files, opts = {}) {
      run(work, ['fetch', '-q', 'origin']);
      const exists = run(bare, ['branch', '--list', branch]) !== '';
      run(work, ['checkout', '-q', '-B', branch, exists ? `origin/${branch}` : `origin/${opts.from ?? 'main'}`]);
      for (const [file, content] of Object.entries(files)) {
        const p = path.join(work, file);
        if (content === null) await rm(p, { force: true });
        else {
          await mkdir(path.dirname(p), { recursive: true });
          await writeFile(p, content);
        }
      }
      run(work, ['add', '-A']);
      run(work, ['commit', '-q', '--allow-empty', '-m', opts.message ?? `change ${Object.keys(files).join(', ')}`]);
      run(work, ['push', '-q', 'origin', `HEAD:refs/heads/${branch}`]);
      return run(work, ['rev-parse', 'HEAD']);
    },
    tip(branch) {
      try {
        return run(bare, ['rev-parse', '--verify', '-q', `refs/heads/${branch}`]);
      } catch {
        return null;
      }
    },
    cleanup: () => rm(root, { recursive: true, force: true }),
  };
  return repo;
}
