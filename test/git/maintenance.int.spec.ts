import { expect } from 'chai';
import { mkdtemp, readdir, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { createEngine } from '../../infra/git/engine.js';
import { createManagedRepo, openManagedRepo } from '../../infra/git/managed-repo.js';
import { bareRepositoriesUnder, maintainRepository, needsMaintenance, RepoMaintainer } from '../../infra/git/maintenance.js';
import { gitOk } from '../support/git-client.js';
import { until } from '../support/wait.js';

const PROJECT = '0b7d3c4e-1f2a-4b5c-8d9e-0a1b2c3d4e5f';

/** `count` (loose objects) and `packs` from `git count-objects -v`, and loose branch ref files. */
async function shape(dir: string): Promise<{ loose: number; packs: number; looseRefs: number }> {
  const out = await gitOk(dir, ['count-objects', '-v']);
  const get = (k: string) => Number(new RegExp(`^${k}: (\\d+)$`, 'm').exec(out)![1]);
  const looseRefs = (await readdir(path.join(dir, 'refs', 'heads'), { recursive: true, withFileTypes: true })).filter((e) => e.isFile()).length;
  return { loose: get('count'), packs: get('packs'), looseRefs };
}

/** Pushes `n` new branches, one commit each, from `work` to origin. */
async function pushBranches(work: string, round: number, n: number): Promise<void> {
  const specs: string[] = [];
  for (let i = 0; i < n; i++) {
    const name = `r${round}-b${i}`;
    await gitOk(work, ['checkout', '-q', '-b', name, 'main']);
    await gitOk(work, ['commit', '-q', '--allow-empty', '-m', `${name}`]);
    specs.push(`${name}:refs/heads/${name}`);
  }
  await gitOk(work, ['checkout', '-q', 'main']);
  await gitOk(work, ['push', '-q', 'origin', ...specs]);
}

/**
 * p50 of a no-op `git fetch` (nothing new: the ref advertisement, the negotiation and the
 * client's ref checks). The fetching clone is packed first, so only the served repository's
 * state differs between the arms.
 */
async function timeFetches(clone: string, times: number): Promise<number> {
  await gitOk(clone, ['fetch', '-q', 'origin']);
  await gitOk(clone, ['pack-refs', '--all', '--prune']);
  await gitOk(clone, ['repack', '-a', '-d', '-q']);
  const ms: number[] = [];
  for (let i = 0; i < times; i++) {
    const t = process.hrtime.bigint();
    await gitOk(clone, ['fetch', '-q', 'origin']);
    ms.push(Number(process.hrtime.bigint() - t) / 1e6);
  }
  ms.sort((a, b) => a - b);
  return ms[Math.floor(ms.length / 2)]!;
}

describe('repository maintenance (issue 24 item 10)', function () {
  this.timeout(600_000);
  let root: string;

  beforeEach(async () => (root = await mkdtemp(path.join(os.tmpdir(), 'svc-maint-'))));
  afterEach(() => rm(root, { recursive: true, force: true }));

  async function managedWithClone(name: string): Promise<{ repo: string; work: string; clone: string }> {
    const repo = path.join(root, 'repos', `${name}.git`);
    await createManagedRepo(repo, 'main');
    const work = path.join(root, `${name}-work`);
    await gitOk(root, ['clone', '-q', repo, work]);
    await gitOk(work, ['checkout', '-q', '-b', 'main']);
    await gitOk(work, ['commit', '-q', '--allow-empty', '-m', 'root']);
    await gitOk(work, ['push', '-q', 'origin', 'main']);
    const clone = path.join(root, `${name}-clone`);
    await gitOk(root, ['clone', '-q', '--bare', repo, clone]);
    await gitOk(clone, ['config', 'remote.origin.fetch', '+refs/heads/*:refs/heads/*']);
    return { repo, work, clone };
  }

  it('soak: branches pushed in rounds are packed after each burst; a no-op fetch stays flat, and the repository holds packs, not loose files', async () => {
    const ROUNDS = 6;
    const PER_ROUND = 60;
    const LIMITS = { looseRefs: PER_ROUND / 2 };
    const maintained = await managedWithClone('maintained');
    const control = await managedWithClone('control');
    const maintainer = new RepoMaintainer({ repositories: async () => [maintained.repo], checkEveryMs: 100, limits: LIMITS });
    maintainer.start();
    const rows: Array<{ branches: number; maintained: number; control: number }> = [];
    try {
      for (let r = 0; r < ROUNDS; r++) {
        await pushBranches(maintained.work, r, PER_ROUND);
        await pushBranches(control.work, r, PER_ROUND);
        // The maintainer notices the growth and packs it: wait for that, not for a clock.
        await until(async () => !(await needsMaintenance(maintained.repo, LIMITS)), `round ${r} maintained`);
        rows.push({ branches: (r + 1) * PER_ROUND, maintained: await timeFetches(maintained.clone, 7), control: await timeFetches(control.clone, 7) });
      }
    } finally {
      await maintainer.stop();
    }
    console.log('      branches  no-op fetch p50 ms: maintained  unmaintained');
    for (const row of rows) console.log(`      ${String(row.branches).padStart(8)}  ${row.maintained.toFixed(1).padStart(30)}  ${row.control.toFixed(1).padStart(12)}`);
    const m = await shape(maintained.repo);
    const c = await shape(control.repo);
    expect(m.loose, 'loose objects left').to.be.below(PER_ROUND);
    expect(m.looseRefs, 'loose refs left').to.be.below(LIMITS.looseRefs);
    expect(m.packs, 'geometric repacking keeps few packs').to.be.at.most(8);
    expect(c.loose, 'the control shows what maintenance removed').to.be.at.least(ROUNDS * PER_ROUND);
    expect(c.looseRefs).to.be.at.least(ROUNDS * PER_ROUND);
    // Flat: the last two rounds within 1.5x (+20 ms of noise on a shared machine) of the first two.
    const mean = (a: number[]) => a.reduce((x, y) => x + y, 0) / a.length;
    const first = mean(rows.slice(0, 2).map((r) => r.maintained));
    const last = mean(rows.slice(-2).map((r) => r.maintained));
    expect(last, `first rounds ${first.toFixed(1)} ms`).to.be.at.most(first * 1.5 + 20);
    await gitOk(maintained.repo, ['fsck', '--no-dangling']);
  });

  it('runs beside reads, branch creations and merges without blocking or breaking them', async () => {
    const dir = path.join(root, 'repos', `${PROJECT}.git`);
    const { work } = await (async () => {
      await createManagedRepo(dir, 'main');
      const w = path.join(root, 'work');
      await gitOk(root, ['clone', '-q', dir, w]);
      await gitOk(w, ['checkout', '-q', '-b', 'main']);
      await gitOk(w, ['commit', '-q', '--allow-empty', '-m', 'root']);
      await gitOk(w, ['push', '-q', 'origin', 'main']);
      return { work: w };
    })();
    await pushBranches(work, 0, 40);
    const repo = openManagedRepo({ repoPath: dir, engine: await createEngine('git'), projectId: PROJECT });
    let stop = false;
    let passes = 0;
    const churn = (async () => {
      while (!stop) {
        await maintainRepository(dir, passes % 2 === 0 ? 'light' : 'full');
        passes++;
      }
    })();
    try {
      for (let i = 0; i < 40; i++) {
        const branch = `r0-b${i}`;
        const tips = await repo.readTips(['main', branch]);
        expect(tips[branch]).to.be.a('string');
        expect((await repo.preview('main', branch)).can_merge).to.equal(true);
        await repo.createBranch(`copy-${i}`, branch);
        const r = await repo.merge({ base_ref: 'main', head_ref: branch, message: `merge ${i}` });
        expect((await repo.readTips(['main'])).main).to.equal(r.merge_commit_sha);
      }
    } finally {
      stop = true;
      await churn;
    }
    expect(passes, 'maintenance ran during the operations').to.be.greaterThan(1);
    for (let i = 0; i < 40; i++) expect(await repo.branchContains('main', (await repo.readTips([`r0-b${i}`]))[`r0-b${i}`]!)).to.equal(true);
    await gitOk(dir, ['fsck', '--no-dangling']);
    expect(await bareRepositoriesUnder(path.join(root, 'repos'))).to.deep.equal([dir]);
  });
});
