import { expect } from 'chai';
import { DomainError } from '../../domain/errors.js';
import type { GitEngine } from '../../infra/git/port.js';
import { SYSTEM_IDENTITY } from '../../infra/git/port.js';
import { enginesUnderTest } from './support/engines.js';
import { lsTree, RepoFixture } from './support/repo-fixture.js';

/**
 * Where libgit2 and merge-ort disagree, written down. merge-ort detects directory
 * renames: a file the base adds to a directory that the head renamed is reported as a
 * conflict (`merge.directoryRenames` defaults to "conflict") and would be moved to the
 * new directory. libgit2 has no directory-rename detection: it merges cleanly and leaves
 * the file in the old directory. The service's verdict follows merge-ort, the engine
 * users run locally; this is why `git` is the default engine.
 */
const engines = await enginesUnderTest();
const byName = new Map(engines.map((e) => [e.name, e.engine]));

describe('engine differences: directory rename vs a file added to the old directory', () => {
  let fx: RepoFixture;
  let base: string;
  let head: string;

  before(async () => {
    fx = await RepoFixture.create();
    await fx.commit('base', { 'src/a.txt': 'a\n', 'src/b.txt': 'b\n' });
    await fx.switch('feature', true);
    await fx.mv('src', 'lib');
    await fx.commit('feature renames src/ to lib/', {});
    await fx.switch('main');
    await fx.commit('main adds src/new.txt', { 'src/new.txt': 'new\n' });
    await fx.push('main', 'feature');
    base = (await fx.originSha('main'))!;
    head = (await fx.originSha('feature'))!;
  });
  after(() => fx?.cleanup());

  it('merge-ort (engine git): conflict on the moved file, nothing written', async () => {
    const engine = byName.get('git')!;
    const p = await engine.preview(fx.origin, base, head);
    expect(p.can_merge).to.equal(false);
    expect(p.conflicts).to.deep.equal(['lib/new.txt']);
    const err = await engine.createMerge(fx.origin, { base_sha: base, head_sha: head, message: 'm', author: SYSTEM_IDENTITY }).then(
      () => null,
      (e: unknown) => e,
    );
    expect(err).to.be.instanceOf(DomainError);
    expect((err as DomainError).code).to.equal('merge_failed');
  });

  const libgit2 = byName.get('libgit2');
  if (libgit2) {
    it('libgit2: merges cleanly and keeps the file at its old path', async () => {
      const engine: GitEngine = libgit2;
      const p = await engine.preview(fx.origin, base, head);
      expect(p.can_merge).to.equal(true);
      expect(p.conflicts).to.deep.equal([]);
      const r = await engine.createMerge(fx.origin, { base_sha: base, head_sha: head, message: 'm', author: SYSTEM_IDENTITY });
      expect(r.kind).to.equal('merge-commit');
      expect(await lsTree(fx.origin, r.merge_commit_sha)).to.deep.equal(['lib/a.txt', 'lib/b.txt', 'src/new.txt']);
    });
  } else if (process.env.CI) {
    it('libgit2: engine required in CI', () => {
      throw new Error('nodegit is not installed; the libgit2 difference cannot be checked');
    });
  }
});
