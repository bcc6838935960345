import { expect } from 'chai';
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { packCheckpoint, restoreCheckpoint } from '../../agentd/wip.js';
import { sessionStateStore } from '../../infra/git/session-state-store.js';
import { decodeFrame, encodeFrame } from '../../lib/checkpoint-frame.js';
import { silentLogger } from '../../lib/logger.js';
import { fixtureRepo, type FixtureRepo } from '../support/repo.js';

/**
 * The daemon's half of pause and resume against real git, and the server's store in
 * between: pack a workspace (an unpushed commit, a change, a deletion, an untracked file,
 * an ignored one, one over the cap, the runtime's files with its auth file), store the
 * bundle as the server does, and restore into a fresh clone, on the same branch tip and
 * after the branch moved on.
 */
const PROJECT = '0b7d5f0e-3c1a-4f7e-9a55-2d7f3c9e8a11';
const SESSION = '5a4c3b2a-1f0e-4d9c-8b7a-6f5e4d3c2b1a';
const env = { ...process.env, GIT_CONFIG_GLOBAL: '/dev/null', GIT_CONFIG_NOSYSTEM: '1', GIT_AUTHOR_NAME: 'A', GIT_AUTHOR_EMAIL: 'a@x', GIT_COMMITTER_NAME: 'A', GIT_COMMITTER_EMAIL: 'a@x' };
const sh = (cwd: string, args: string[]) => execFileSync('git', args, { cwd, env, encoding: 'utf8' }).replace(/\n$/, '');

describe('agentd: checkpoint pack and restore (real git)', function () {
  this.timeout(60_000);
  let repo: FixtureRepo;
  let root: string;
  before(async () => {
    repo = await fixtureRepo();
    await repo.commit('s', { 'keep.txt': 'keep\n', 'gone.txt': 'gone\n' }, { from: 'main' });
    root = await mkdtemp(path.join(os.tmpdir(), 'svc-wip-'));
  });
  after(async () => {
    await repo?.cleanup();
    await rm(root, { recursive: true, force: true });
  });

  const clone = (name: string) => {
    const ws = path.join(root, name);
    execFileSync('git', ['clone', '-q', '-b', 's', repo.url, ws], { env });
    return ws;
  };

  it('saves what the branch does not hold (within the cap, no ignored or auth files) and restores it, unstaged, in a fresh clone', async () => {
    const ws = clone('one');
    const home = path.join(root, 'home-one');
    await writeFile(path.join(ws, 'local.txt'), 'committed, not pushed\n');
    sh(ws, ['add', 'local.txt']);
    sh(ws, ['commit', '-q', '-m', 'local']);
    const localHead = sh(ws, ['rev-parse', 'HEAD']);
    await writeFile(path.join(ws, 'keep.txt'), 'keep\nchanged\n');
    await rm(path.join(ws, 'gone.txt'));
    await writeFile(path.join(ws, 'staged.txt'), 'staged only\n');
    sh(ws, ['add', 'staged.txt']);
    await mkdir(path.join(ws, 'dir'), { recursive: true });
    await writeFile(path.join(ws, 'dir', 'new.txt'), 'untracked\n');
    await writeFile(path.join(ws, '.git', 'info', 'exclude'), '*.log\n');
    await writeFile(path.join(ws, 'debug.log'), 'ignored\n');
    await writeFile(path.join(ws, 'huge.bin'), Buffer.alloc(5000, 1));
    const data = path.join(home, '.local', 'share', 'opencode');
    await mkdir(path.join(data, 'storage', 'session'), { recursive: true });
    await writeFile(path.join(data, 'opencode.db'), 'DB');
    await writeFile(path.join(data, 'storage', 'session', 'a.json'), '{"a":1}');
    await writeFile(path.join(data, 'auth.json'), 'SECRET');
    const indexBefore = await readFile(path.join(ws, '.git', 'index'));
    const refsBefore = sh(ws, ['for-each-ref']);

    const packed = await packCheckpoint({ workspace: ws, home, xdgDataHome: undefined, maxBytes: 1000 }, '1.2.3');
    expect(packed.skipped).to.deep.equal([{ path: 'huge.bin', bytes: 5000, reason: 'over SVC_SESSION_WIP_MAX_BYTES' }]);
    // The workspace's own index and refs are untouched.
    expect(await readFile(path.join(ws, '.git', 'index'))).to.deep.equal(indexBefore);
    expect(sh(ws, ['for-each-ref'])).to.equal(refsBefore);
    const parts = decodeFrame(packed.frame);
    expect(parts.header).to.include({ wip_sha: packed.wipSha, head_sha: localHead, runtime_version: '1.2.3' });
    const conv = JSON.parse(parts.conversation.toString()) as { path: string }[];
    expect(conv.map((f) => f.path).sort()).to.deep.equal(['opencode.db', 'storage/session/a.json']);
    // Same state, same key (the daemon sends nothing then).
    expect((await packCheckpoint({ workspace: ws, home, xdgDataHome: undefined, maxBytes: 1000 }, '1.2.3')).key).to.equal(packed.key);

    // The server's store: verified, fetched, read back as a bundle.
    const store = sessionStateStore(path.join(root, 'repos'));
    await store.accept(PROJECT, SESSION, parts.bundle, packed.wipSha!);
    const back = await store.bundle(PROJECT, SESSION);
    expect(back).to.not.equal(null);

    const ws2 = clone('two');
    const home2 = path.join(root, 'home-two');
    const r = await restoreCheckpoint({ workspace: ws2, home: home2, xdgDataHome: undefined, maxBytes: 1000 }, encodeFrame({ wip_sha: packed.wipSha, conversation: 'restored' }, back!, parts.conversation), silentLogger);
    expect(r.workspace).to.equal('restored');
    expect(sh(ws2, ['rev-parse', 'HEAD'])).to.equal(localHead);
    expect(sh(ws2, ['status', '--porcelain']).split('\n').sort()).to.deep.equal([' D gone.txt', ' M keep.txt', '?? dir/', '?? staged.txt']);
    expect(existsSync(path.join(ws2, 'debug.log'))).to.equal(false);
    expect(existsSync(path.join(ws2, 'huge.bin'))).to.equal(false);
    expect(sh(ws2, ['for-each-ref', 'refs/svc/'])).to.equal('');
    expect(await readFile(path.join(home2, '.local', 'share', 'opencode', 'opencode.db'), 'utf8')).to.equal('DB');
    expect(existsSync(path.join(home2, '.local', 'share', 'opencode', 'auth.json'))).to.equal(false);

    // The branch moved on meanwhile: the saved changes land on top of it.
    await repo.commit('s', { 'other.txt': 'from elsewhere\n' });
    const ws3 = clone('three');
    const tip = sh(ws3, ['rev-parse', 'HEAD']);
    const r3 = await restoreCheckpoint({ workspace: ws3, home: path.join(root, 'home-three'), xdgDataHome: undefined, maxBytes: 1000 }, encodeFrame({ wip_sha: packed.wipSha, conversation: 'none' }, back!, Buffer.alloc(0)), silentLogger);
    expect(r3.workspace).to.equal('restored');
    expect(sh(ws3, ['rev-parse', 'HEAD'])).to.equal(tip);
    expect(await readFile(path.join(ws3, 'keep.txt'), 'utf8')).to.equal('keep\nchanged\n');
    expect(await readFile(path.join(ws3, 'local.txt'), 'utf8')).to.equal('committed, not pushed\n');
    expect(await readFile(path.join(ws3, 'other.txt'), 'utf8')).to.equal('from elsewhere\n');
    expect(existsSync(path.join(ws3, 'dir', 'new.txt'))).to.equal(true);

    // A bundle that does not hold the commit it names is refused, and leaves no ref.
    const other = '6b5d4c3b-2a1f-4e0d-9c8b-7a6f5e4d3c2b';
    const refusal = (p: Promise<unknown>) => p.then(() => 'accepted', (err: Error) => err.message);
    expect(await refusal(store.accept(PROJECT, other, parts.bundle, 'f'.repeat(40)))).to.match(/does not hold/);
    expect(await refusal(store.accept(PROJECT, other, Buffer.from('not a bundle'), packed.wipSha!))).to.match(/not a valid git bundle/);
    expect(await store.bundle(PROJECT, other)).to.equal(null);
    await store.remove(PROJECT, SESSION);
    expect(await store.bundle(PROJECT, SESSION)).to.equal(null);
  });
});
