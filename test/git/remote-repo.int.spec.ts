import { expect } from 'chai';
import { readdir, readFile, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { Writable } from 'node:stream';
import { pino } from 'pino';
import { DomainError } from '../../domain/errors.js';
import type { GitEngine, MergeHooks, ProjectRepo } from '../../infra/git/port.js';
import { openProjectRepo } from '../../infra/git/open-repo.js';
import { MirrorRegistry } from '../../infra/git/mirror.js';
import { enginesUnderTest, forEachEngine } from './support/engines.js';
import { git, parentsOf, RepoFixture } from './support/repo-fixture.js';
import { startHttpGitServer, type HttpGitServer } from './support/http-git-server.js';
import { domainError } from '../support/domain-error.js';
import { setFailpoint } from '../../lib/failpoints.js';
import { repoUnavailable } from '../../infra/git/errors.js';

const engines = await enginesUnderTest();
/** The user the HTTP test servers accept. */
const USER = 'svc-bot';

/** main and a diverged feature branch, pushed to origin. */
async function divergedFixture(): Promise<RepoFixture> {
  const fx = await RepoFixture.create();
  await fx.commit('base', { 'a.txt': 'a\n', 'b.txt': 'b\n' });
  await fx.switch('feature', true);
  await fx.commit('feature', { 'b.txt': 'b\nfeature\n' });
  await fx.switch('main');
  await fx.commit('main', { 'a.txt': 'a\nmain\n' });
  await fx.push('main', 'feature');
  return fx;
}

forEachEngine(engines, 'remote repo backend', (engine: GitEngine) => {
  describe('a file:// repository, worked on in place', () => {
    let fx: RepoFixture;
    let mirrors: MirrorRegistry;
    let repo: ProjectRepo;
    let mirrorsDir: string;

    beforeEach(async () => {
      fx = await divergedFixture();
      mirrors = new MirrorRegistry();
      mirrorsDir = await fx.dir('mirrors');
      repo = openProjectRepo({ location: { projectId: 'proj', url: fx.originUrl }, mirrorsDir, engine, mirrors });
    });
    afterEach(() => fx?.cleanup());

    const fetches = () => mirrors.state(path.join(mirrorsDir, 'proj.git')).fetches;

    it('a deleted view is a cache: the next diff and preview rebuild it', async () => {
      const before = await repo.diffBranches('main', 'feature');
      const views = async () => (await readdir(mirrorsDir)).filter((d) => d.endsWith('.view.git'));
      expect(await views()).to.have.length(1);
      await rm(path.join(mirrorsDir, (await views())[0]!), { recursive: true, force: true });
      expect(await repo.diffBranches('main', 'feature')).to.deep.equal(before);
      await rm(path.join(mirrorsDir, (await views())[0]!), { recursive: true, force: true });
      expect((await repo.preview('main', 'feature')).can_merge).to.equal(true);
    });

    it('readTips: live tips of all requested branches, null for a missing one', async () => {
      const tips = await repo.readTips(['main', 'feature', 'nope']);
      expect(tips).to.deep.equal({ main: await fx.originSha('main'), feature: await fx.originSha('feature'), nope: null });
      expect(fetches()).to.equal(0, 'reading tips needs no objects');
      await fx.switch('feature');
      const moved = await fx.commit('more', { 'c.txt': 'c\n' });
      await fx.push('feature');
      expect((await repo.readTips(['feature'])).feature).to.equal(moved);
    });

    it('missing branch: not_found from preview, diff, merge and createBranch', async () => {
      for (const op of [
        () => repo.preview('main', 'nope'),
        () => repo.diffBranches('nope', 'feature'),
        () => repo.merge({ base_ref: 'main', head_ref: 'nope', message: 'm' }),
        () => repo.createBranch('session-1', 'nope'),
      ]) {
        expect((await domainError(op())).code).to.equal('not_found');
      }
      expect(await fx.originSha('session-1')).to.equal(null);
    });

    it('bad ref names are refused before git runs', async () => {
      for (const bad of ['-upload-pack=touch x', '../main', 'a..b', 'main.lock', '@{-1}', 'with space']) {
        expect((await domainError(repo.preview('main', bad))).code).to.equal('validation');
      }
      expect((await domainError(repo.diffCommits('HEAD', 'main'))).code).to.equal('validation');
    });

    it('works in place: no mirror and no fetch; its own merge and a commit pushed there are seen at once', async () => {
      await Promise.all([repo.preview('main', 'feature'), repo.diffBranches('main', 'feature')]);
      const r = await repo.merge({ base_ref: 'main', head_ref: 'feature', message: 'merge' });
      expect(await fx.originSha('main')).to.equal(r.merge_commit_sha);
      expect((await repo.merge({ base_ref: 'main', head_ref: 'feature', message: 'again' })).kind).to.equal('up-to-date');
      await fx.switch('feature');
      await fx.commit('more work', { 'more.txt': 'more\n' });
      await fx.push('feature');
      const p = await repo.preview('main', 'feature');
      expect(p.head_sha).to.equal(await fx.originSha('feature'));
      expect(p.base_sha).to.equal(r.merge_commit_sha);
      expect(fetches()).to.equal(0);
      expect((await readdir(mirrorsDir)).filter((d) => !d.endsWith('.view.git')), 'no mirror').to.deep.equal([]);
    });

    it('a base that moves after the merge is computed: the compare-and-swap refuses, nothing overwritten', async () => {
      const preview = await repo.preview('main', 'feature');
      expect(preview.can_merge).to.equal(true);
      let moved = '';
      const err = await domainError(
        repo.merge(
          { base_ref: 'main', head_ref: 'feature', message: 'merge' },
          {
            beforePublish: async (result) => {
              expect(result.kind).to.equal('merge-commit');
              await fx.switch('main');
              moved = await fx.commit('someone else pushed', { 'z.txt': 'z\n' });
              await fx.push('main');
            },
          },
        ),
      );
      expect(err.code).to.equal('concurrency');
      expect(await fx.originSha('main')).to.equal(moved);
      // A retry computes against the new base and succeeds.
      const r = await repo.merge({ base_ref: 'main', head_ref: 'feature', message: 'merge' });
      expect(await parentsOf(fx.origin, r.merge_commit_sha)).to.deep.equal([moved, await fx.originSha('feature')]);
      expect(await fx.originSha('main')).to.equal(r.merge_commit_sha);
    });

    it('expected_head_sha that no longer matches: head_modified, nothing moves', async () => {
      const base = await fx.originSha('main');
      const stale = await fx.sha('main~1');
      const err = await domainError(repo.merge({ base_ref: 'main', head_ref: 'feature', message: 'm', expected_head_sha: stale }));
      expect(err.code).to.equal('head_modified');
      expect(await fx.originSha('main')).to.equal(base);
    });

    it('createBranch creates the branch at the base tip, once', async () => {
      const tip = await repo.createBranch('6f1c2a4e-session', 'main');
      expect(tip).to.equal(await fx.originSha('main'));
      expect(await fx.originSha('6f1c2a4e-session')).to.equal(tip);
      expect((await domainError(repo.createBranch('6f1c2a4e-session', 'main'))).code).to.equal('conflict');
      expect((await domainError(repo.createBranch('-x', 'main'))).code).to.equal('validation');
    });

    it('engine updateBranch is a compare-and-swap', async () => {
      const mirror = fx.origin;
      const main = (await engine.resolveBranch(mirror, 'main'))!;
      const feature = (await engine.resolveBranch(mirror, 'feature'))!;
      expect(await engine.resolveBranch(mirror, 'nope')).to.equal(null);
      expect((await domainError(engine.updateBranch(mirror, 'main', feature, feature))).code).to.equal('concurrency');
      expect((await domainError(engine.updateBranch(mirror, 'main', feature, null))).code).to.equal('concurrency');
      expect(await engine.resolveBranch(mirror, 'main')).to.equal(main);
      await engine.updateBranch(mirror, 'main', feature, main);
      expect(await engine.resolveBranch(mirror, 'main')).to.equal(feature);
      await engine.updateBranch(mirror, 'fresh', main, null);
      expect(await engine.resolveBranch(mirror, 'fresh')).to.equal(main);
      expect(await engine.isAncestor(mirror, main, main)).to.equal(true);
    });
  });

  describe('unreachable remote', () => {
    let fx: RepoFixture;
    before(async () => {
      fx = await RepoFixture.create();
    });
    after(() => fx?.cleanup());

    it('a missing file:// repository and a closed port are `unavailable`', async () => {
      const closed = await startHttpGitServer(fx.root, 'u', 'p');
      const closedUrl = `${closed.url}/nothing.git`;
      await closed.close();
      for (const url of [`${fx.originUrl}-missing`, closedUrl]) {
        const repo = openProjectRepo({ location: { projectId: 'gone', url }, mirrorsDir: await fx.dir('m'), engine, mirrors: new MirrorRegistry() });
        for (const op of [
          () => repo.readTips(['main']),
          () => repo.preview('main', 'feature'),
          () => repo.merge({ base_ref: 'main', head_ref: 'x', message: 'm' }),
        ]) {
          expect((await domainError(op())).code).to.equal('unavailable');
        }
      }
    });
  });

  describe('over smart HTTP with basic auth', () => {
    const PASSWORD = 'pw-Zq8!s3cr3t-never-logged';
    let fx: RepoFixture;
    let server: HttpGitServer;
    let mirrorsDir: string;
    let logs: string;

    const capture = () => {
      logs = '';
      return pino(
        { level: 'debug' },
        new Writable({
          write(chunk: Buffer, _enc, cb) {
            logs += chunk.toString('utf8');
            cb();
          },
        }),
      );
    };

    /** The origin over http with these credentials, its own mirror registry, its logs captured. */
    const overHttp = (projectId: string, password: string) =>
      openProjectRepo({
        location: { projectId, url: `${server.url}/origin.git`, credentials: { username: USER, password } },
        mirrorsDir,
        engine,
        mirrors: new MirrorRegistry(),
        logger: capture(),
      });

    before(async () => {
      fx = await divergedFixture();
      server = await startHttpGitServer(fx.root, USER, PASSWORD);
      mirrorsDir = await fx.dir('mirrors');
    });
    after(async () => {
      await server?.close();
      await fx?.cleanup();
    });

    it('reads, previews, diffs, merges and creates branches with credentials from the helper', async () => {
      const repo = overHttp('http', PASSWORD);
      const before = await fx.originSha('main');
      const p = await repo.preview('main', 'feature');
      expect(p).to.include({ can_merge: true, can_fast_forward: false, is_up_to_date: false });
      expect((await repo.diffBranches('main', 'feature')).files.map((f) => f.path)).to.deep.equal(['b.txt']);
      const r = await repo.merge({ base_ref: 'main', head_ref: 'feature', message: 'Merge CR #2: over http' });
      expect(await fx.originSha('main')).to.equal(r.merge_commit_sha);
      expect(await parentsOf(fx.origin, r.merge_commit_sha)).to.deep.equal([before, await fx.originSha('feature')]);
      expect(await repo.createBranch('session-http', 'main')).to.equal(r.merge_commit_sha);
      expect(server.authAttempts).to.be.greaterThan(0);

      const mirror = path.join(mirrorsDir, 'http.git');
      const config = await git(mirror, ['config', '--list', '--local']);
      expect(config).to.not.include(PASSWORD);
      expect(config).to.not.include(USER);
      for (const file of await filesUnder(mirror)) {
        const text = await readFile(file, 'latin1');
        expect(text.includes(PASSWORD), `password found in ${file}`).to.equal(false);
      }
      expect(logs).to.not.include(PASSWORD);
    });

    it('the mirror: fetches only when needed, shares one in-flight fetch, fetches new remote commits but not its own merge', async () => {
      const mirrors = new MirrorRegistry();
      const repo = openProjectRepo({ location: { projectId: 'http-fetches', url: `${server.url}/origin.git`, credentials: { username: USER, password: PASSWORD } }, mirrorsDir, engine, mirrors });
      const fetches = () => mirrors.state(path.join(mirrorsDir, 'http-fetches.git')).fetches;
      await Promise.all([repo.preview('main', 'feature'), repo.diffBranches('main', 'feature'), repo.preview('main', 'feature')]);
      expect(fetches()).to.equal(1, 'concurrent requests share one fetch');
      await repo.preview('main', 'feature');
      expect(fetches()).to.equal(1, 'the mirror already has both commits');
      const again = openProjectRepo({ location: { projectId: 'http-fetches', url: `${server.url}/origin.git`, credentials: { username: USER, password: PASSWORD } }, mirrorsDir, engine, mirrors });
      await again.diffBranches('main', 'feature');
      expect(fetches()).to.equal(1, 'a second repo object shares the registry');
      await fx.switch('feature');
      await fx.commit('more http work', { 'more-http.txt': 'more\n' });
      await fx.push('feature');
      await fx.switch('main');
      const p = await repo.preview('main', 'feature');
      expect(fetches()).to.equal(2, 'a commit pushed to the remote is fetched');
      expect(p.head_sha).to.equal(await fx.originSha('feature'));
      await repo.merge({ base_ref: 'main', head_ref: 'feature', message: 'merge' });
      await repo.preview('main', 'feature');
      expect(fetches()).to.equal(2, 'its own merge was made in the mirror: nothing to fetch');
    });

    it('a deleted mirror is a cache: the next diff and preview rebuild it', async () => {
      const repo = overHttp('http-cache', PASSWORD);
      const before = await repo.diffBranches('main', 'feature');
      await repo.diffBranches('main', 'feature'); // commits now known to be in the mirror
      await rm(path.join(mirrorsDir, 'http-cache.git'), { recursive: true, force: true });
      expect(await repo.diffBranches('main', 'feature')).to.deep.equal(before);
      await rm(path.join(mirrorsDir, 'http-cache.git'), { recursive: true, force: true });
      expect((await repo.preview('main', 'feature')).can_merge).to.equal(true);
    });

    it('a wrong password is `unavailable`, and the password is nowhere in the error or logs', async () => {
      const wrong = `${PASSWORD}-wrong`;
      const repo = overHttp('http-bad', wrong);
      const err = await domainError(repo.preview('main', 'feature'));
      expect(err.code).to.equal('unavailable');
      const everything = JSON.stringify({ m: err.message, d: err.details, s: err.stack }) + logs;
      expect(everything).to.not.include(wrong);
      expect(logs).to.include('remote repository unreachable');
    });

    it('a URL that carries credentials is refused outright', () => {
      expect(() =>
        openProjectRepo({ location: { projectId: 'x', url: `http://${USER}:${PASSWORD}@127.0.0.1/x.git` }, mirrorsDir, engine }),
      ).to.throw(DomainError).with.property('code', 'validation');
    });
  });

  describe('over smart HTTP: merging on the tips the mirror holds (no fetch, one atomic push with leases)', () => {
    const PASSWORD = 'pw-presumed';
    let server: HttpGitServer;
    let fx: RepoFixture;
    let repo: ProjectRepo;

    beforeEach(async () => {
      fx = await divergedFixture();
      server = await startHttpGitServer(fx.root, USER, PASSWORD);
      const location = { projectId: 'p', url: `${server.url}/origin.git`, credentials: { username: USER, password: PASSWORD } };
      repo = openProjectRepo({ location, mirrorsDir: await fx.dir('mirrors'), engine, mirrors: new MirrorRegistry() });
      await repo.preview('main', 'feature'); // a reviewed CR: the mirror holds both branches
    });
    afterEach(async () => {
      await server?.close();
      await fx?.cleanup();
    });

    /** Hooks that log `before <sha>` / `not-published <sha>` in call order. */
    const recordingHooks = () => {
      const calls: string[] = [];
      const hooks: MergeHooks = {
        beforePublish: async (x) => void calls.push(`before ${x.merge_commit_sha}`),
        notPublished: async (x) => void calls.push(`not-published ${x.merge_commit_sha}`),
      };
      return { hooks, calls };
    };
    /** Requests since `from` that fetch (upload-pack) and that push (receive-pack POSTs). */
    const traffic = (from: number) => {
      const reqs = server.requests.slice(from);
      return { fetches: reqs.filter((r) => r.includes('git-upload-pack')).length, pushes: reqs.filter((r) => r.startsWith('POST') && r.includes('git-receive-pack')).length };
    };
    /** Moves `branch` on origin by a commit made elsewhere; returns the new tip. */
    const moveOnOrigin = async (branch: string, file: string) => {
      await fx.switch(branch);
      const sha = await fx.commit(`elsewhere on ${branch}`, { [file]: `${file}\n` });
      await fx.push(branch);
      return sha;
    };

    it('merges with no fetch and one push, and the next merge presumes the base it published', async () => {
      const base = await fx.originSha('main');
      const head = await fx.originSha('feature');
      const from = server.requests.length;
      const seen: string[] = [];
      const r = await repo.merge({ base_ref: 'main', head_ref: 'feature', message: 'm1', expected_head_sha: head! }, { beforePublish: async (x) => void seen.push(x.merge_commit_sha) });
      expect(traffic(from)).to.deep.equal({ fetches: 0, pushes: 1 });
      expect(seen).to.deep.equal([r.merge_commit_sha]);
      expect(r).to.include({ kind: 'merge-commit', base_sha: base, head_sha: head });
      expect(await fx.originSha('main')).to.equal(r.merge_commit_sha);
      expect(await fx.originSha('feature')).to.equal(head, 'the head is leased, never moved');
      expect(await parentsOf(fx.origin, r.merge_commit_sha)).to.deep.equal([base, head]);

      // A second branch the mirror has seen, onto the base we published: again no fetch.
      await fx.switch('main');
      await fx.switch('second', true);
      const second = await fx.commit('second', { 'c.txt': 'c\n' });
      await fx.push('second');
      await repo.preview('main', 'second');
      const from2 = server.requests.length;
      const r2 = await repo.merge({ base_ref: 'main', head_ref: 'second', message: 'm2' });
      expect(traffic(from2)).to.deep.equal({ fetches: 0, pushes: 1 });
      expect(r2.base_sha).to.equal(r.merge_commit_sha);
      expect(await parentsOf(fx.origin, r2.merge_commit_sha)).to.deep.equal([r.merge_commit_sha, second]);
    });

    it('a base moved since the mirror saw it: the lease refuses, nothing stale is published, the merge is made again on the new base', async () => {
      const head = await fx.originSha('feature');
      const moved = await moveOnOrigin('main', 'moved.txt');
      const from = server.requests.length;
      const { hooks, calls } = recordingHooks();
      const r = await repo.merge({ base_ref: 'main', head_ref: 'feature', message: 'm' }, hooks);
      expect(traffic(from).fetches).to.be.greaterThan(0, 'the long way fetched');
      const seen = calls.map((c) => c.split(' ')[1]);
      expect(calls).to.deep.equal([`before ${seen[0]}`, `not-published ${seen[0]}`, `before ${r.merge_commit_sha}`], 'the stale result is withdrawn, the live one recorded');
      expect(seen[0]).to.not.equal(r.merge_commit_sha);
      expect(r.base_sha).to.equal(moved);
      expect(await fx.originSha('main')).to.equal(r.merge_commit_sha);
      expect(await parentsOf(fx.origin, r.merge_commit_sha)).to.deep.equal([moved, head]);
      expect(await fx.originGit('cat-file', '-t', seen[0]!).then(() => 'present', () => 'absent')).to.equal('absent', 'the stale merge never reached the remote');
    });

    it('a head moved since the mirror saw it: the head lease refuses; the new head is merged, or head_modified when it was expected', async () => {
      const old = await fx.originSha('feature');
      const base = await fx.originSha('main');
      const moved = await moveOnOrigin('feature', 'later.txt');
      const { hooks, calls } = recordingHooks();
      const err = await domainError(repo.merge({ base_ref: 'main', head_ref: 'feature', message: 'm', expected_head_sha: old! }, hooks));
      expect(err.code).to.equal('head_modified');
      const stale = calls[0]!.split(' ')[1];
      // Withdrawn before the error: a caller sees head_modified, as before, not an unknown outcome.
      expect(calls).to.deep.equal([`before ${stale}`, `not-published ${stale}`]);
      expect(err.details).to.deep.equal({ expected_head_sha: old, head_sha: moved });
      expect(await fx.originSha('main')).to.equal(base, 'nothing published');
      const r = await repo.merge({ base_ref: 'main', head_ref: 'feature', message: 'm' });
      expect(r.head_sha).to.equal(moved);
      expect(await parentsOf(fx.origin, r.merge_commit_sha)).to.deep.equal([base, moved]);
    });

    it('a hook refuses the update: the same `Push rejected` with the reason as the long way, nothing moved', async () => {
      const base = await fx.originSha('main');
      const hook = path.join(fx.origin, 'hooks', 'pre-receive');
      await writeFile(hook, '#!/bin/sh\necho "main is frozen" >&2\nexit 1\n', { mode: 0o755 });
      const from = server.requests.length;
      const err = await domainError(repo.merge({ base_ref: 'main', head_ref: 'feature', message: 'm' }));
      expect(traffic(from)).to.deep.equal({ fetches: 0, pushes: 1 }, 'refused on the fast path, as the long way would be');
      expect(err.code).to.equal('unavailable');
      expect(err.reason).to.equal('Push rejected');
      expect(err.message).to.equal('The repository refused to update main: pre-receive hook declined.');
      expect(err.details).to.deep.equal({ reason: 'pre-receive hook declined' });
      expect(await fx.originSha('main')).to.equal(base);
    });

    it('the answer of a push that moved the base is lost: the error reaches the caller, the base holds the recorded merge', async () => {
      const { hooks, calls } = recordingHooks();
      let hits = 0;
      const clear = setFailpoint('git.push.after-remote-moved', () => {
        hits++;
        throw repoUnavailable();
      });
      try {
        const err = await domainError(repo.merge({ base_ref: 'main', head_ref: 'feature', message: 'm' }, hooks));
        expect(err.code).to.equal('unavailable');
      } finally {
        clear();
      }
      expect(hits).to.equal(1);
      expect(calls).to.have.length(1);
      expect(calls[0]).to.equal(`before ${await fx.originSha('main')}`);
    });

    it('a server without atomic pushes: merged the long way, and the next merges go the long way at once', async () => {
      await fx.originGit('config', 'receive.advertiseAtomic', 'false');
      const base = await fx.originSha('main');
      const head = await fx.originSha('feature');
      const r = await repo.merge({ base_ref: 'main', head_ref: 'feature', message: 'm' });
      expect(await parentsOf(fx.origin, r.merge_commit_sha)).to.deep.equal([base, head]);
      expect(await fx.originSha('main')).to.equal(r.merge_commit_sha);
      await fx.switch('main');
      await fx.switch('next', true);
      await fx.commit('next', { 'n.txt': 'n\n' });
      await fx.push('next');
      await repo.preview('main', 'next');
      const from = server.requests.length;
      await repo.merge({ base_ref: 'main', head_ref: 'next', message: 'm2' });
      const t = traffic(from);
      expect(t.fetches).to.be.greaterThan(0, 'the long way: a fetch first');
      expect(t.pushes).to.equal(1);
    });
  });
});

async function filesUnder(dir: string): Promise<string[]> {
  const out: string[] = [];
  for (const name of await readdir(dir)) {
    const p = path.join(dir, name);
    if ((await stat(p)).isDirectory()) out.push(...(await filesUnder(p)));
    else out.push(p);
  }
  return out;
}
