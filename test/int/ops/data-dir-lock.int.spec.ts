import { expect } from 'chai';
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { DataDirLockedError, lockDataDir } from '../../../infra/data-dir-lock.js';
import { projectRoot } from '../../../lib/paths.js';
import { until } from '../../support/wait.js';

/** The embedded server's data-dir lock (infra/data-dir-lock.ts), held by real processes. */
describe('one server per data directory: the lock', function () {
  this.timeout(30_000);
  let dir: string;
  beforeEach(async () => {
    dir = await mkdtemp(path.join(os.tmpdir(), 'svc-lock-'));
  });
  afterEach(() => rm(dir, { recursive: true, force: true }));

  /** Another process holding the lock until it is killed. */
  const holder = async () => {
    const mod = path.join(projectRoot, 'dist', 'infra', 'data-dir-lock.js');
    const child = spawn(process.execPath, ['--input-type=module', '-e', `const m = await import(${JSON.stringify(mod)}); await m.lockDataDir(${JSON.stringify(dir)}); console.log('locked'); setInterval(() => {}, 1000);`], { stdio: ['ignore', 'pipe', 'inherit'] });
    let out = '';
    child.stdout!.on('data', (c: Buffer) => (out += c.toString()));
    await until(async () => out.includes('locked'), 'the other process to hold the lock');
    return child;
  };
  const killed = (child: ReturnType<typeof spawn>) =>
    new Promise<void>((r) => {
      child.once('exit', () => r());
      child.kill('SIGKILL');
    });

  it('a live holder is refused, named by its pid; once it dies (SIGKILL: its file stays) the next one takes the lock', async () => {
    const other = await holder();
    try {
      const err = await lockDataDir(dir).then(() => null, (e: unknown) => e);
      expect(err).to.be.instanceOf(DataDirLockedError);
      expect((err as DataDirLockedError).pid).to.equal(other.pid);
      expect((err as Error).message).to.contain(`pid ${other.pid}`).and.contain(dir);
    } finally {
      await killed(other);
    }
    expect(existsSync(path.join(dir, 'server.lock')), 'a killed holder leaves its file').to.equal(true);
    const lock = await lockDataDir(dir);
    expect(JSON.parse(await readFile(lock.file, 'utf8')).pid).to.equal(process.pid);
    await lock.release();
    expect(existsSync(lock.file)).to.equal(false);
  });

  it('a file naming a live process that started at another time (a reused pid), garbage, or this very process is stale', async () => {
    const other = await holder();
    try {
      const file = path.join(dir, 'server.lock');
      for (const text of [JSON.stringify({ pid: other.pid, started: '1', since: '' }), 'not json', JSON.stringify({ pid: process.pid, started: null, since: '' })]) {
        await writeFile(file, text);
        const lock = await lockDataDir(dir);
        await lock.release();
      }
    } finally {
      await killed(other);
    }
  });

  for (const stale of [false, true]) {
    it(`two processes starting at once${stale ? ' over a dead holder\'s file' : ''}: exactly one holds it, the other names it`, async () => {
      if (stale) await writeFile(path.join(dir, 'server.lock'), JSON.stringify({ pid: 999_999_999, started: null, since: '' }));
      const mod = path.join(projectRoot, 'dist', 'infra', 'data-dir-lock.js');
      const script = `const m = await import(${JSON.stringify(mod)}); try { await m.lockDataDir(${JSON.stringify(dir)}); console.log('locked'); setInterval(() => {}, 1000); } catch (e) { console.log('refused ' + e.pid); process.exit(0); }`;
      const kids = [0, 1].map(() => {
        const child = spawn(process.execPath, ['--input-type=module', '-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
        const k = { child, out: '' };
        child.stdout!.on('data', (c: Buffer) => (k.out += c.toString()));
        return k;
      });
      try {
        await until(async () => kids.every((k) => k.out.trim() !== ''), 'both to answer');
        const winner = kids.find((k) => k.out.trim() === 'locked');
        const loser = kids.find((k) => k !== winner);
        expect(winner, kids.map((k) => k.out).join(' | ')).to.not.equal(undefined);
        expect(loser!.out.trim()).to.equal(`refused ${winner!.child.pid}`);
      } finally {
        for (const k of kids) if (k.child.exitCode === null) await killed(k.child);
      }
    });
  }
});
