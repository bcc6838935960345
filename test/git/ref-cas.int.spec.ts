import { expect } from 'chai';
import { execFileSync } from 'node:child_process';
import { chmod, mkdtemp, readdir, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { casBranch } from '../../infra/git/ref-cas.js';
import { localRefReader } from '../../infra/git/local-refs.js';
import { pathToFileURL } from 'node:url';
import { SYSTEM_IDENTITY } from '../../infra/git/port.js';
import { cleanEnv } from '../../lib/git-run.js';

describe('branch compare-and-swap without git (infra/git/ref-cas.ts)', function () {
  this.timeout(30_000);
  let root: string;
  let n = 0;
  const git = (cwd: string, ...args: string[]) =>
    execFileSync('git', args, { cwd, env: cleanEnv({ GIT_AUTHOR_NAME: 'T', GIT_AUTHOR_EMAIL: 't@example.test', GIT_COMMITTER_NAME: 'T', GIT_COMMITTER_EMAIL: 't@example.test' }), encoding: 'utf8' }).trim();
  const reflog = { identity: SYSTEM_IDENTITY, epochSeconds: 1_700_000_000, message: 'svc: merge' };

  /** A bare repository with `main` at commit one and `two` a commit on top of it. */
  async function repo(): Promise<{ dir: string; one: string; two: string }> {
    const work = path.join(root, `w${++n}`);
    git(root, 'init', '-q', '-b', 'main', work);
    await writeFile(path.join(work, 'a.txt'), 'a\n');
    git(work, 'add', '-A');
    git(work, 'commit', '-q', '-m', 'one');
    const one = git(work, 'rev-parse', 'HEAD');
    git(work, 'commit', '-q', '--allow-empty', '-m', 'two');
    const two = git(work, 'rev-parse', 'HEAD');
    const dir = path.join(root, `r${n}.git`);
    git(root, 'clone', '-q', '--bare', work, dir);
    git(dir, 'update-ref', 'refs/heads/main', one);
    return { dir, one, two };
  }

  before(async () => {
    root = await mkdtemp(path.join(os.tmpdir(), 'svc-ref-cas-'));
  });
  after(() => rm(root, { recursive: true, force: true }));

  it('moves a loose ref from the expected value; refuses (stale) from any other, writing nothing', async () => {
    const { dir, one, two } = await repo();
    expect(casBranch(localRefReader(pathToFileURL(dir).href), dir, 'main', two, two, reflog)).to.equal('stale');
    expect(git(dir, 'rev-parse', 'refs/heads/main')).to.equal(one);
    expect(casBranch(localRefReader(pathToFileURL(dir).href), dir, 'main', two, one, reflog)).to.equal('moved');
    expect(git(dir, 'rev-parse', 'refs/heads/main')).to.equal(two);
    expect((await readdir(path.join(dir, 'refs', 'heads'))).filter((f) => f.endsWith('.lock'))).to.deep.equal([]);
    git(dir, 'fsck', '--no-dangling');
  });

  it('a packed-only ref: compared with its packed value, then overridden by a loose one, as git does', async () => {
    const { dir, one, two } = await repo();
    git(dir, 'pack-refs', '--all');
    expect(casBranch(localRefReader(pathToFileURL(dir).href), dir, 'main', two, one, reflog)).to.equal('moved');
    expect(git(dir, 'rev-parse', 'refs/heads/main')).to.equal(two);
    expect(git(dir, 'for-each-ref', '--format=%(objectname)', 'refs/heads/main')).to.equal(two);
  });

  it('keeps the reflog when the repository keeps one', async () => {
    const { dir, one, two } = await repo();
    git(dir, 'config', 'core.logAllRefUpdates', 'true');
    expect(casBranch(localRefReader(pathToFileURL(dir).href), dir, 'main', two, one, reflog)).to.equal('moved');
    expect(git(dir, 'reflog', 'show', '--format=%H %gs', 'refs/heads/main')).to.equal(`${two} svc: merge`);
  });

  it('leaves it to git (null) when the lock is taken; a reference-transaction hook changes nothing (no git the server runs runs hooks)', async () => {
    const { dir, one, two } = await repo();
    const lock = path.join(dir, 'refs', 'heads', 'main.lock');
    await writeFile(lock, '');
    expect(casBranch(localRefReader(pathToFileURL(dir).href), dir, 'main', two, one, reflog)).to.equal(null);
    expect((await readdir(path.join(dir, 'refs', 'heads'))).includes('main.lock'), 'the other holder keeps its lock').to.equal(true);
    await rm(lock);
    const hook = path.join(dir, 'hooks', 'reference-transaction');
    await writeFile(hook, '#!/bin/sh\nexit 0\n');
    await chmod(hook, 0o755);
    expect(casBranch(localRefReader(pathToFileURL(dir).href), dir, 'main', two, one, reflog)).to.equal('moved');
    expect(git(dir, 'rev-parse', 'refs/heads/main')).to.equal(two);
  });
});
