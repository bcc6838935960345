import { expect } from 'chai';
import { execFileSync } from 'node:child_process';
import { readFile, symlink, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { localRefReader, parsePackedRefs } from '../../infra/git/local-refs.js';
import { openProjectRepo } from '../../infra/git/open-repo.js';
import { LsRemoteBatcher } from '../../infra/git/ls-remote-batcher.js';
import { MirrorRegistry } from '../../infra/git/mirror.js';
import { createEngine } from '../../infra/git/engine.js';
import { git, RepoFixture } from './support/repo-fixture.js';

/** What `git ls-remote` says about `names` (the answer the reader must match). */
async function lsRemote(fx: RepoFixture, url: string, names: string[]): Promise<Record<string, string | null>> {
  const out = await git(fx.root, ['ls-remote', url, ...names.map((n) => `refs/heads/${n}`)]);
  const tips: Record<string, string | null> = Object.fromEntries(names.map((n) => [n, null]));
  for (const line of out.split('\n')) {
    const [sha, ref] = line.split('\t');
    const name = ref?.startsWith('refs/heads/') ? ref.slice('refs/heads/'.length) : null;
    if (sha && name !== null && name in tips) tips[name] = sha;
  }
  return tips;
}

/** Runs `fn` with git unreachable: anything that spawns git fails. */
async function withoutGit<T>(fn: () => Promise<T>): Promise<T> {
  const saved = process.env.PATH;
  process.env.PATH = '/nonexistent-svc-test';
  try {
    return await fn();
  } finally {
    process.env.PATH = saved;
  }
}

const NAMES = ['main', 'feature', 'topic/nested/deep', 'a', 'a/b', 'nope', 'topic/nope', 'x-after-pack'];

describe('local ref reader (file:// remotes read from disk, no process)', () => {
  let fx: RepoFixture;

  beforeEach(async () => {
    fx = await RepoFixture.create('svc-local-refs-');
    await fx.commit('base', { 'a.txt': 'a\n' });
    await fx.switch('feature', true);
    await fx.commit('feature', { 'b.txt': 'b\n' });
    await fx.switch('topic/nested/deep', true);
    await fx.commit('deep', { 'c.txt': 'c\n' });
    await fx.switch('a/b', true);
    await fx.commit('a/b', { 'd.txt': 'd\n' });
    await fx.switch('main');
    await fx.push('main', 'feature', 'topic/nested/deep', 'a/b');
  });
  afterEach(() => fx?.cleanup());

  it('agrees with ls-remote on loose refs, and reads them without starting git', async () => {
    const reader = localRefReader(fx.originUrl)!;
    expect(reader).to.not.equal(null);
    const expected = await lsRemote(fx, fx.originUrl, NAMES);
    expect(expected.main).to.be.a('string');
    expect(expected.a).to.equal(null, '`a` is a directory of refs, not a ref');
    expect(await withoutGit(() => reader.readTips(NAMES))).to.deep.equal(expected);
  });

  it('packed refs (git pack-refs --all), a branch updated after packing, one created and one deleted after', async () => {
    await fx.originGit('pack-refs', '--all');
    const reader = localRefReader(fx.originUrl)!;
    expect(await reader.readTips(NAMES)).to.deep.equal(await lsRemote(fx, fx.originUrl, NAMES));
    // Updated after packing: a loose file now overrides the packed line.
    await fx.switch('feature');
    const moved = await fx.commit('after pack', { 'b.txt': 'b2\n' });
    await fx.push('feature');
    // Created after packing (loose only), and deleted after packing (gone from packed-refs).
    await fx.originGit('update-ref', 'refs/heads/x-after-pack', moved);
    await fx.originGit('update-ref', '-d', 'refs/heads/a/b');
    const tips = (await withoutGit(() => reader.readTips(NAMES)))!;
    expect(tips.feature).to.equal(moved);
    expect(tips['x-after-pack']).to.equal(moved);
    expect(tips['a/b']).to.equal(null);
    expect(tips).to.deep.equal(await lsRemote(fx, fx.originUrl, NAMES));
    // Packed again: same answers from packed-refs alone.
    await fx.originGit('pack-refs', '--all');
    expect(await reader.readTips(NAMES)).to.deep.equal(tips);
  });

  it('never loses a branch while refs are being packed and updated', async () => {
    const reader = localRefReader(fx.originUrl)!;
    await fx.switch('feature');
    const seen = new Set<string | null>();
    const expected = new Set<string>([(await fx.originSha('feature'))!]);
    let stop = false;
    const reads = (async () => {
      while (!stop) {
        const t = (await reader.readTips(['feature', 'main']))!;
        seen.add(t.feature ?? null);
        if (t.main === null) throw new Error('main vanished during pack-refs');
        await new Promise((r) => setImmediate(r)); // let the git processes' events through
      }
    })();
    for (let i = 0; i < 8; i++) {
      expected.add(await fx.commit(`round ${i}`, { 'b.txt': `b${i}\n` }));
      await fx.push('feature');
      await fx.originGit('pack-refs', '--all');
    }
    stop = true;
    await reads;
    expect(seen.has(null)).to.equal(false, 'a read returned null for an existing branch');
    for (const sha of seen) expect(expected.has(sha!)).to.equal(true);
  });

  it('leaves to git what git decides: symbolic refs, hidden refs, non-bare repositories, other URLs', async () => {
    // A symbolic branch: ls-remote shows the target's tip.
    await fx.originGit('symbolic-ref', 'refs/heads/alias', 'refs/heads/feature');
    expect(await localRefReader(fx.originUrl)!.readTips(['alias'])).to.equal(null);
    // Refs hidden from upload-pack: ls-remote does not list them.
    await fx.originGit('config', 'uploadpack.hideRefs', 'refs/heads/feature');
    expect(await localRefReader(fx.originUrl)!.readTips(['main'])).to.equal(null);
    await fx.originGit('config', '--unset', 'uploadpack.hideRefs');
    expect(await localRefReader(fx.originUrl)!.readTips(['main'])).to.not.equal(null);
    // A working repository (not bare), a missing directory.
    expect(await localRefReader(pathToFileURL(fx.work).href)!.readTips(['main'])).to.equal(null);
    expect(await localRefReader(`${fx.originUrl}-missing`)!.readTips(['main'])).to.equal(null);
    // Not local at all.
    expect(localRefReader('https://example.test/r.git')).to.equal(null);
    expect(localRefReader('git@example.test:r.git')).to.equal(null);
    expect(localRefReader('file://otherhost/srv/r.git')).to.equal(null);
  });

  it('a loose ref that is a symlink or not an object id is left to git', async () => {
    const heads = path.join(fx.origin, 'refs', 'heads');
    await writeFile(path.join(heads, 'garbage'), 'not a sha\n');
    expect(await localRefReader(fx.originUrl)!.readTips(['garbage'])).to.equal(null);
    await symlink(path.join(heads, 'main'), path.join(heads, 'linked'));
    expect(await localRefReader(fx.originUrl)!.readTips(['linked'])).to.equal(null);
    // Too long to be one object id, though it starts with one.
    const main = (await readFile(path.join(heads, 'main'), 'latin1')).trim();
    await writeFile(path.join(heads, 'long'), `${main}\n${'x'.repeat(300)}\n`);
    expect(await localRefReader(fx.originUrl)!.readTips(['long'])).to.equal(null);
    // A FIFO is opened without blocking (no writer will ever come) and left to git.
    execFileSync('mkfifo', [path.join(heads, 'fifo')]);
    expect(await localRefReader(fx.originUrl)!.readTips(['fifo'])).to.equal(null);
  });

  it('a file:// project: readTips answers as ls-remote does for symrefs; refs hidden from fetchers are still read in place', async () => {
    const engine = await createEngine('git');
    const repo = openProjectRepo({ location: { projectId: 'p', url: fx.originUrl }, mirrorsDir: await fx.dir('m'), engine, mirrors: new MirrorRegistry() });
    await fx.originGit('symbolic-ref', 'refs/heads/alias', 'refs/heads/feature');
    const names = [...NAMES, 'alias'];
    expect(await repo.readTips(names)).to.deep.equal(await lsRemote(fx, fx.originUrl, names));
    // Plain branches of a local bare repository: no process at all.
    expect(await withoutGit(() => repo.readTips(['main', 'feature']))).to.deep.equal(await lsRemote(fx, fx.originUrl, ['main', 'feature']));
    await fx.originGit('config', 'uploadpack.hideRefs', 'refs/heads/feature');
    // `uploadpack.hideRefs` says what the repository serves to fetchers; the server works on
    // it in place (as on a managed repository) and never reads its config with git.
    const hidden = await repo.readTips(['main', 'feature']);
    expect(hidden.feature).to.equal(await fx.originSha('feature'));
  });

  it('refuses invalid branch names before touching the disk', async () => {
    const reader = localRefReader(fx.originUrl)!;
    for (const bad of ['../config', 'a/../../x', '-x', 'main.lock', '/abs']) {
      let err: unknown;
      try {
        await reader.readTips([bad]);
      } catch (e) {
        err = e;
      }
      expect(err, bad).to.have.property('code', 'validation');
    }
  });

  it('parses packed-refs: header, peeled lines, refusal of junk', () => {
    const a = 'a'.repeat(40);
    const b = 'b'.repeat(40);
    const refs = parsePackedRefs(`# pack-refs with: peeled fully-peeled sorted \n${a} refs/heads/main\n${b} refs/tags/v1\n^${a}\n`);
    expect(Object.fromEntries(refs!)).to.deep.equal({ 'refs/heads/main': a, 'refs/tags/v1': b });
    expect(parsePackedRefs('nonsense refs/heads/main\n')).to.equal(null);
  });
});

describe('LsRemoteBatcher: concurrent ls-remote calls share only calls started after they asked', () => {
  interface Call {
    names: string[];
    resolve(m: Map<string, string>): void;
    reject(e: Error): void;
  }
  const setup = () => {
    const calls: Call[] = [];
    const batcher = new LsRemoteBatcher(
      (names) =>
        new Promise((resolve, reject) => {
          calls.push({ names: [...names].sort(), resolve, reject });
        }),
    );
    return { calls, batcher };
  };
  const tick = () => new Promise((r) => setImmediate(r));

  it('callers arriving during a call wait for the next one, which asks for all their branches', async () => {
    const { calls, batcher } = setup();
    const a = batcher.read(['main', 'a']);
    await tick();
    expect(calls).to.have.length(1);
    const b = batcher.read(['main', 'b']);
    const c = batcher.read(['c']);
    await tick();
    expect(calls).to.have.length(1, 'b and c must not start a second call while one runs');
    calls[0]!.resolve(new Map([['main', 'old'], ['a', 'A']]));
    expect(await a).to.deep.equal(new Map([['main', 'old'], ['a', 'A']]));
    await tick();
    expect(calls).to.have.length(2);
    expect(calls[1]!.names).to.deep.equal(['b', 'c', 'main']);
    // The second call has started: d does not join it, it waits for a third.
    const d = batcher.read(['main']);
    calls[1]!.resolve(new Map([['main', 'new'], ['b', 'B']]));
    expect((await b).get('main')).to.equal('new', 'b never sees the result of a call that started before it asked');
    expect((await c).get('c')).to.equal(undefined);
    await tick();
    expect(calls).to.have.length(3);
    calls[2]!.resolve(new Map([['main', 'newer']]));
    expect((await d).get('main')).to.equal('newer');
    expect(batcher.calls).to.equal(3);
  });

  it('a failure reaches every caller of that call; the next call starts afresh', async () => {
    const { calls, batcher } = setup();
    const first = batcher.read(['main']);
    const waiting = [batcher.read(['main']), batcher.read(['x'])];
    await tick();
    calls[0]!.resolve(new Map([['main', 's']]));
    await first;
    await tick();
    calls[1]!.reject(new Error('unreachable'));
    for (const w of waiting) {
      let err: unknown;
      try {
        await w;
      } catch (e) {
        err = e;
      }
      expect((err as Error).message).to.equal('unreachable');
    }
    const again = batcher.read(['main']);
    await tick();
    expect(calls).to.have.length(3);
    calls[2]!.resolve(new Map([['main', 't']]));
    expect((await again).get('main')).to.equal('t');
  });

  it('a lone caller starts at once; sequential callers each get their own call', async () => {
    const { calls, batcher } = setup();
    for (let i = 0; i < 3; i++) {
      const p = batcher.read(['main']);
      await tick();
      calls[i]!.resolve(new Map([['main', String(i)]]));
      expect((await p).get('main')).to.equal(String(i));
    }
    expect(batcher.calls).to.equal(3);
  });
});
