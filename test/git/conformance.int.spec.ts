import { expect } from 'chai';
import type { GitEngine, MergePreview, ProjectRepo } from '../../infra/git/port.js';
import { SYSTEM_IDENTITY } from '../../infra/git/port.js';
import { openProjectRepo } from '../../infra/git/open-repo.js';
import { MirrorRegistry } from '../../infra/git/mirror.js';
import { enginesUnderTest, forEachEngine } from './support/engines.js';
import { commitCount, git, lsTree, parentsOf, RepoFixture, showFile } from './support/repo-fixture.js';
import { scenarios, type Scenario } from './support/scenarios.js';
import { domainError } from '../support/domain-error.js';

/**
 * One suite, every engine: each scenario is checked at the engine level (on the bare
 * origin) and through the `remote` backend (file:// URL, its own mirror), and both must
 * give the answers the scenario states.
 */
const engines = await enginesUnderTest();

forEachEngine(engines, 'git conformance', (engine: GitEngine) => {
  for (const sc of scenarios) {
    describe(sc.name, () => {
      let fx: RepoFixture;
      let base: string;
      let head: string;
      let expectedPreview: MergePreview;
      let repo: ProjectRepo;

      before(async () => {
        fx = await RepoFixture.create();
        await sc.build(fx);
        base = (await fx.originSha('main'))!;
        head = (await fx.originSha('feature'))!;
        expectedPreview = await previewFor(fx, sc, base, head);
        repo = openProjectRepo({
          location: { projectId: 'p1', url: fx.originUrl },
          mirrorsDir: await fx.dir('mirrors'),
          engine,
          mirrors: new MirrorRegistry(),
        });
      });
      after(() => fx?.cleanup());

      it('engine: preview', async () => {
        expect(await engine.preview(fx.origin, base, head)).to.deep.equal(expectedPreview);
      });

      it('engine: three-dot diff', async () => {
        const d = await engine.diff(fx.origin, base, head);
        expect(d.base_sha).to.equal(base);
        expect(d.head_sha).to.equal(head);
        expect(d.merge_base).to.equal(expectedPreview.merge_base);
        expect(d.files.map((f) => [f.path, f.status, f.additions, f.deletions, f.binary])).to.deep.equal(sc.diff);
        expect(d.additions).to.equal(sc.diff.reduce((n, f) => n + f[2], 0));
        expect(d.deletions).to.equal(sc.diff.reduce((n, f) => n + f[3], 0));
        if (sc.diff.length === 0) expect(d.patch).to.equal('');
        for (const line of sc.patchHas ?? []) expect(d.patch.split('\n')).to.include(line);
        for (const f of sc.diff) expect(d.patch).to.include(`diff --git a/${f[0]} b/${f[0]}`);
      });

      it('engine: createMerge', async () => {
        const commitsBefore = await commitCount(fx.origin);
        const req = { base_sha: base, head_sha: head, message: 'Merge CR #1: test', author: SYSTEM_IDENTITY, date: new Date(1_700_100_000_000) };
        if (sc.merge === 'merge_failed' || sc.merge === 'validation') {
          const e = await domainError(engine.createMerge(fx.origin, req));
          expect(e.code).to.equal(sc.merge);
          if (sc.merge === 'merge_failed') expect(e.details.conflicts).to.deep.equal(sc.preview.conflicts);
          expect(await commitCount(fx.origin)).to.equal(commitsBefore, 'a refused merge writes no commit');
          return;
        }
        const r = await engine.createMerge(fx.origin, req);
        expect(r.kind).to.equal(sc.merge);
        expect(r.base_sha).to.equal(base);
        expect(r.head_sha).to.equal(head);
        if (sc.merge === 'fast-forward') expect(r.merge_commit_sha).to.equal(head);
        if (sc.merge === 'up-to-date') expect(r.merge_commit_sha).to.equal(base);
        if (sc.merge === 'merge-commit') {
          expect(await parentsOf(fx.origin, r.merge_commit_sha)).to.deep.equal([base, head]);
          const meta = await git(fx.origin, ['log', '-1', '--format=%an|%ae|%cn|%ce|%at|%B', r.merge_commit_sha]);
          expect(meta.trim()).to.equal(`svc|noreply@svc.local|svc|noreply@svc.local|1700100000|Merge CR #1: test`);
        }
        await expectMergedFiles(fx.origin, r.merge_commit_sha, sc);
        // Nothing moved: createMerge touches no ref.
        expect(await fx.originSha('main')).to.equal(base);
      });

      it('remote backend: preview and diff read the live tips', async () => {
        expect(await repo.preview('main', 'feature')).to.deep.equal(expectedPreview);
        const d = await repo.diffBranches('main', 'feature');
        expect(d.files.map((f) => [f.path, f.status, f.additions, f.deletions, f.binary])).to.deep.equal(sc.diff);
        const byCommits = await repo.diffCommits(base, head);
        expect(byCommits).to.deep.equal(d);
      });

      it('remote backend: merge moves origin main (or refuses and moves nothing)', async () => {
        if (sc.merge === 'merge_failed' || sc.merge === 'validation') {
          let published = false;
          const e = await domainError(
            repo.merge({ base_ref: 'main', head_ref: 'feature', message: 'm' }, { beforePublish: async () => void (published = true) }),
          );
          expect(e.code).to.equal(sc.merge);
          if (sc.merge === 'merge_failed') expect(e.details.conflicts).to.deep.equal(sc.preview.conflicts);
          expect(published).to.equal(false);
          expect(await fx.originSha('main')).to.equal(base);
          expect(await fx.originSha('feature')).to.equal(head);
          return;
        }
        const seen: string[] = [];
        const r = await repo.merge(
          { base_ref: 'main', head_ref: 'feature', message: 'Merge CR #7: feature', expected_head_sha: head },
          { beforePublish: async (res) => void seen.push(res.merge_commit_sha) },
        );
        expect(r.kind).to.equal(sc.merge);
        expect(seen).to.deep.equal([r.merge_commit_sha]);
        expect(await fx.originSha('main')).to.equal(r.merge_commit_sha);
        expect(await fx.originSha('feature')).to.equal(head, 'the head branch is never deleted or moved');
        if (sc.merge === 'fast-forward') expect(r.merge_commit_sha).to.equal(head);
        if (sc.merge === 'up-to-date') expect(r.merge_commit_sha).to.equal(base);
        if (sc.merge === 'merge-commit') {
          expect(await parentsOf(fx.origin, r.merge_commit_sha)).to.deep.equal([base, head]);
          const author = await git(fx.origin, ['log', '-1', '--format=%an <%ae>', r.merge_commit_sha]);
          expect(author.trim()).to.equal('svc <noreply@svc.local>');
        }
        await expectMergedFiles(fx.origin, r.merge_commit_sha, sc);
        // After the merge head is contained in base.
        const after = await repo.preview('main', 'feature');
        expect(after.is_up_to_date).to.equal(true);
      });
    });
  }
});

async function previewFor(fx: RepoFixture, sc: Scenario, base: string, head: string): Promise<MergePreview> {
  let mb: string | null = null;
  if (sc.preview.mergeBase === 'base') mb = base;
  else if (sc.preview.mergeBase === 'head') mb = head;
  else if (sc.preview.mergeBase === 'older') {
    mb = (await git(fx.origin, ['merge-base', base, head])).trim();
    expect(mb).to.not.be.oneOf([base, head]);
  }
  const { mergeBase: _, ...flags } = sc.preview;
  return { base_sha: base, head_sha: head, merge_base: mb, ...flags };
}

async function expectMergedFiles(repoPath: string, sha: string, sc: Scenario): Promise<void> {
  const files = await lsTree(repoPath, sha);
  for (const [file, content] of Object.entries(sc.merged ?? {})) {
    if (content === null) expect(files).to.not.include(file);
    else expect(await showFile(repoPath, sha, file)).to.equal(content);
  }
}
