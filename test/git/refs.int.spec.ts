import { expect } from 'chai';
import { execFile } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { isValidBranchName } from '../../domain/refs.js';
import { generatedNames, HANDPICKED } from './support/ref-names.js';

/**
 * Our rules against the real `git check-ref-format --branch`, name by name. The only
 * allowed disagreements are the documented extra strictness: `@` alone, and a name that
 * starts with `refs/` (it would read as a full ref: a CR head naming the hidden
 * `refs/svc/…` of paused sessions is refused, docs/sessions.md).
 */
const STRICTER_THAN_GIT = (n: string) => n === '@' || n.startsWith('refs/');

function gitAccepts(cwd: string, name: string): Promise<boolean> {
  return new Promise((resolve) => {
    execFile(
      'git',
      ['check-ref-format', '--branch', name],
      { cwd, env: { PATH: process.env.PATH ?? '/usr/bin:/bin', GIT_CONFIG_NOSYSTEM: '1', GIT_CONFIG_GLOBAL: '/dev/null', GIT_CEILING_DIRECTORIES: path.dirname(cwd) } },
      (err) => resolve(err === null),
    );
  });
}

describe('branch name rules agree with git check-ref-format --branch', function () {
  this.timeout(120_000);
  let dir: string;
  before(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'svc-refs-')); // not a repository: `@{-1}` cannot resolve
  });
  after(() => rm(dir, { recursive: true, force: true }));

  // NUL cannot travel in argv; it is covered by the unit table.
  const names = [...new Set([...HANDPICKED, ...generatedNames()])].filter((n) => !n.includes('\0'));

  it(`matches git on ${names.length} names`, async () => {
    expect(names.length).to.be.greaterThan(300);
    const mismatches: string[] = [];
    for (let i = 0; i < names.length; i += 32) {
      const batch = names.slice(i, i + 32);
      const verdicts = await Promise.all(batch.map((n) => gitAccepts(dir, n)));
      batch.forEach((n, j) => {
        const git = verdicts[j]!;
        const ours = isValidBranchName(n);
        if (git !== ours && !(STRICTER_THAN_GIT(n) && git && !ours)) mismatches.push(`${JSON.stringify(n)} git=${git} ours=${ours}`);
      });
    }
    expect(mismatches).to.deep.equal([]);
  });

  it('rejects every option-like and traversal name git would also reject', async () => {
    for (const n of ['-x', '--upload-pack=x', '..', '../a', 'a/../b', '/a', 'a//b']) {
      expect(await gitAccepts(dir, n), n).to.equal(false);
      expect(isValidBranchName(n), n).to.equal(false);
    }
  });
});
