import { expect } from 'chai';
import { execFileSync } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { writeMergeCommit } from '../../infra/git/commit-object.js';
import { identityEnv } from '../../infra/git/engine-ort.js';
import { SYSTEM_IDENTITY } from '../../infra/git/port.js';
import { cleanEnv } from '../../lib/git-run.js';

describe('merge commits written without git (infra/git/commit-object.ts)', function () {
  this.timeout(30_000);
  let root: string;
  let bare: string;
  let copy: string;
  let tree: string;
  let base: string;
  let head: string;
  const git = (cwd: string, args: string[], env: Record<string, string> = {}, input?: string) =>
    execFileSync('git', args, { cwd, env: cleanEnv({ GIT_AUTHOR_NAME: 'T', GIT_AUTHOR_EMAIL: 't@example.test', GIT_COMMITTER_NAME: 'T', GIT_COMMITTER_EMAIL: 't@example.test', ...env }), encoding: 'utf8', ...(input !== undefined ? { input } : {}) }).trim();

  before(async () => {
    root = await mkdtemp(path.join(os.tmpdir(), 'svc-commit-object-'));
    const work = path.join(root, 'work');
    git(root, ['init', '-q', '-b', 'main', work]);
    await writeFile(path.join(work, 'a.txt'), 'a\n');
    git(work, ['add', '-A']);
    git(work, ['commit', '-q', '-m', 'one']);
    git(work, ['checkout', '-q', '-b', 'topic']);
    await writeFile(path.join(work, 'b.txt'), 'b\n');
    git(work, ['add', '-A']);
    git(work, ['commit', '-q', '-m', 'topic']);
    git(work, ['checkout', '-q', 'main']);
    await writeFile(path.join(work, 'c.txt'), 'c\n');
    git(work, ['add', '-A']);
    git(work, ['commit', '-q', '-m', 'main']);
    bare = path.join(root, 'a.git');
    copy = path.join(root, 'b.git');
    git(root, ['clone', '-q', '--bare', work, bare]);
    git(root, ['clone', '-q', '--bare', work, copy]);
    base = git(bare, ['rev-parse', 'refs/heads/main']);
    head = git(bare, ['rev-parse', 'refs/heads/topic']);
    tree = git(bare, ['merge-tree', '--write-tree', base, head]);
    git(copy, ['merge-tree', '--write-tree', base, head]);
  });
  after(() => rm(root, { recursive: true, force: true }));

  for (const message of ['Merge CR #1: plain', 'Merge CR #2: ünïcode, "quotes", tabs\tand\nlines\n', 'Merge CR #3: emoji 🚀 and trailing spaces   ']) {
    it(`the same object, byte for byte, as commit-tree: ${JSON.stringify(message.slice(0, 24))}`, () => {
      const epochSeconds = 1_700_000_000;
      const ours = writeMergeCommit(bare, { tree, parents: [base, head], author: SYSTEM_IDENTITY, epochSeconds, message });
      const theirs = git(copy, ['commit-tree', tree, '-p', base, '-p', head, '-F', '-'], identityEnv({ base_sha: base, head_sha: head, message, author: SYSTEM_IDENTITY, date: new Date(epochSeconds * 1000) }), message.endsWith('\n') ? message : `${message}\n`);
      expect(ours).to.equal(theirs);
      expect(git(bare, ['cat-file', '-t', ours!])).to.equal('commit');
      expect(git(bare, ['cat-file', 'commit', ours!])).to.equal(git(copy, ['cat-file', 'commit', theirs]));
      // Written twice: the same id, no error.
      expect(writeMergeCommit(bare, { tree, parents: [base, head], author: SYSTEM_IDENTITY, epochSeconds, message })).to.equal(ours);
    });
  }

  it('git accepts what was written (fsck --strict), and leaves no temporary file', () => {
    git(bare, ['fsck', '--strict', '--no-dangling']);
    const left = execFileSync('find', [path.join(bare, 'objects'), '-name', 'tmp_obj_*'], { encoding: 'utf8' }).trim();
    expect(left).to.equal('');
  });

  it('declines (null: commit-tree runs) where git might write other bytes', async () => {
    const c = { tree, parents: [base, head] as [string, string], epochSeconds: 1_700_000_000, message: 'm' };
    expect(writeMergeCommit(bare, { ...c, author: { name: ' padded ', email: 'x@y.z' } })).to.equal(null);
    expect(writeMergeCommit(bare, { ...c, author: { name: 'A <b>', email: 'x@y.z' } })).to.equal(null);
    expect(writeMergeCommit(bare, { ...c, author: { name: 'A', email: 'x <y@z>' } })).to.equal(null);
    const shared = path.join(root, 'shared.git');
    git(root, ['clone', '-q', '--bare', bare, shared]);
    git(shared, ['config', 'core.sharedRepository', 'group']);
    expect(writeMergeCommit(shared, { ...c, author: SYSTEM_IDENTITY })).to.equal(null);
  });
});
