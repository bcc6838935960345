import { execFile } from 'node:child_process';
import { mkdtemp, mkdir, rm, writeFile, readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

/**
 * A throwaway pair of repositories built with real git: a working clone where the test
 * writes commits (`work`) and the bare repository it pushes to (`origin.git`), which
 * plays the project's remote. Commit dates are fixed and increase, so ids are stable
 * within a run and ordering is clear.
 */
export class RepoFixture {
  private tick = 0;

  private constructor(
    readonly root: string,
    readonly work: string,
    readonly origin: string,
  ) {}

  static async create(prefix = 'svc-git-'): Promise<RepoFixture> {
    const root = await mkdtemp(path.join(tmpdir(), prefix));
    const fx = new RepoFixture(root, path.join(root, 'work'), path.join(root, 'origin.git'));
    await mkdir(fx.work);
    await git(root, ['init', '--bare', '--quiet', '-b', 'main', fx.origin]);
    await fx.git('init', '--quiet', '-b', 'main');
    await fx.git('remote', 'add', 'origin', fx.origin);
    return fx;
  }

  get originUrl(): string {
    return pathToFileURL(this.origin).href;
  }

  /** A fresh directory for mirrors, inside this fixture's root. */
  async dir(name: string): Promise<string> {
    const d = path.join(this.root, name);
    await mkdir(d, { recursive: true });
    return d;
  }

  async cleanup(): Promise<void> {
    await rm(this.root, { recursive: true, force: true });
  }

  git(...args: string[]): Promise<string> {
    return git(this.work, args, this.dates());
  }

  /** Runs git in the bare origin. */
  originGit(...args: string[]): Promise<string> {
    return git(this.origin, args, this.dates());
  }

  /** Writes (string/Buffer) or deletes (null) files, commits them, returns the new commit id. */
  async commit(message: string, files: Record<string, string | Buffer | null>): Promise<string> {
    for (const [rel, content] of Object.entries(files)) {
      const p = path.join(this.work, rel);
      if (content === null) {
        await this.git('rm', '--quiet', '--', rel);
      } else {
        await mkdir(path.dirname(p), { recursive: true });
        await writeFile(p, content);
        await this.git('add', '--', rel);
      }
    }
    await this.git('commit', '--quiet', '--allow-empty', '-m', message);
    return this.sha('HEAD');
  }

  async mv(from: string, to: string): Promise<void> {
    await mkdir(path.dirname(path.join(this.work, to)), { recursive: true });
    await this.git('mv', '--', from, to);
  }

  async switch(branch: string, create = false): Promise<void> {
    await this.git('switch', '--quiet', ...(create ? ['-c'] : []), branch);
  }

  async orphan(branch: string): Promise<void> {
    await this.git('switch', '--quiet', '--orphan', branch);
  }

  /** Pushes the named branches to origin (forced: the fixture owns origin). */
  async push(...branches: string[]): Promise<void> {
    await this.git('push', '--quiet', '--force', 'origin', ...branches.map((b) => `+refs/heads/${b}:refs/heads/${b}`));
  }

  async sha(rev: string): Promise<string> {
    return (await this.git('rev-parse', '--verify', rev)).trim();
  }

  async originSha(branch: string): Promise<string | null> {
    try {
      return (await this.originGit('rev-parse', '--verify', '--quiet', `refs/heads/${branch}`)).trim();
    } catch {
      return null;
    }
  }

  async read(file: string): Promise<string> {
    return readFile(path.join(this.work, file), 'utf8');
  }

  private dates(): Record<string, string> {
    const t = `@${1_700_000_000 + this.tick++ * 60} +0000`;
    return { GIT_AUTHOR_DATE: t, GIT_COMMITTER_DATE: t };
  }
}

const BASE_ENV = {
  PATH: process.env.PATH ?? '/usr/bin:/bin',
  HOME: tmpdir(),
  LC_ALL: 'C',
  GIT_CONFIG_NOSYSTEM: '1',
  GIT_CONFIG_GLOBAL: '/dev/null',
  GIT_TERMINAL_PROMPT: '0',
  GIT_AUTHOR_NAME: 'Test Author',
  GIT_AUTHOR_EMAIL: 'author@example.test',
  GIT_COMMITTER_NAME: 'Test Author',
  GIT_COMMITTER_EMAIL: 'author@example.test',
};

/** Runs git for a fixture; rejects with stderr on a non-zero exit. */
export function git(cwd: string, args: string[], env: Record<string, string> = {}): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(
      'git',
      args,
      { cwd, env: { ...BASE_ENV, ...env }, maxBuffer: 64 * 1024 * 1024, encoding: 'utf8' },
      (err, stdout, stderr) => {
        if (err) reject(new Error(`git ${args.join(' ')} failed in ${cwd}: ${stderr || err.message}`));
        else resolve(stdout);
      },
    );
  });
}

/** Commit objects in a repository, referenced or not: proves a failed merge wrote none. */
export async function commitCount(repoPath: string): Promise<number> {
  const out = await git(repoPath, ['cat-file', '--batch-all-objects', '--batch-check=%(objecttype)']);
  return out.split('\n').filter((l) => l === 'commit').length;
}

/** Parents of a commit, in order. */
export async function parentsOf(repoPath: string, sha: string): Promise<string[]> {
  const out = await git(repoPath, ['rev-list', '--parents', '-n', '1', sha]);
  return out.trim().split(' ').slice(1);
}

export async function showFile(repoPath: string, rev: string, file: string): Promise<string> {
  return git(repoPath, ['show', `${rev}:${file}`]);
}

export async function lsTree(repoPath: string, rev: string): Promise<string[]> {
  return (await git(repoPath, ['ls-tree', '-r', '--name-only', rev])).split('\n').filter(Boolean);
}
