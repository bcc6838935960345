import { expect } from 'chai';
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { projectRoot } from '../../../lib/paths.js';
import { rebuildProjections } from '../../../projections/rebuild.js';
import { serverAndRepo } from '../../support/suite.js';
import { client } from '../../support/http.js';

const run = promisify(execFile);

/** Mulberry32: a seeded PRNG, so a failing sequence can be replayed. */
function prng(seed: number) {
  return () => {
    seed |= 0;
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

describe('projection rebuild', function () {
  this.timeout(120_000);
  const fx = serverAndRepo();

  // SVC_TEST_SEED=<n> replays a sequence; the seed in use is printed either way.
  const seed = Number(process.env.SVC_TEST_SEED ?? Date.now() % 100000);
  const api = () => client(fx.srv.url, fx.srv.token);
  let unique = 0;

  /** Fresh projects (unique slugs) with `crs` CRs each, one closed: what each test reads, set up by it. */
  async function seeded(crs = 2): Promise<{ slug: string; projectId: string }[]> {
    const out: { slug: string; projectId: string }[] = [];
    for (const tag of ['a', 'b']) {
      const slug = `seeded-${tag}-${++unique}`;
      const res = await api().post('/v1/projects', { name: slug, slug, repo_url: fx.repo.url });
      expect(res.status).to.equal(201);
      const base = `/v1/projects/${slug}/change-requests`;
      for (let i = 0; i < crs; i++) {
        await fx.repo.commit(`s${i}`, { [`s${i}.txt`]: `${i}\n` });
        expect((await api().post(base, { title: `S${i}`, head_ref: `s${i}` })).status).to.equal(201);
      }
      expect((await api().post(`${base}/1/close`)).status).to.equal(200);
      out.push({ slug, projectId: res.body.project.project_id });
    }
    return out;
  }

  it(`replays to exactly the live rows after a randomized command sequence (seed ${seed})`, async () => {
    console.log(`      rebuild: seed ${seed} (replay with SVC_TEST_SEED=${seed})`);
    const rnd = prng(seed);
    const pick = <T>(xs: T[]) => xs[Math.floor(rnd() * xs.length)]!;
    const api = client(fx.srv.url, fx.srv.token);
    const slugs = ['alpha', 'beta'];
    for (const slug of slugs) await api.post('/v1/projects', { name: slug, slug, repo_url: fx.repo.url });
    const branches = ['b0', 'b1', 'b2', 'b3'];
    for (const b of branches) await fx.repo.commit(b, { [`${b}.txt`]: `${b}\n` });
    const counts: Record<string, number> = { alpha: 0, beta: 0 };
    for (let i = 0; i < 80; i++) {
      const slug = pick(slugs);
      const base = `/v1/projects/${slug}/change-requests`;
      const op = counts[slug] === 0 ? 'open' : pick(['open', 'open', 'edit', 'close', 'reopen', 'read', 'push', 'merge']);
      const n = 1 + Math.floor(rnd() * Math.max(1, counts[slug]!));
      switch (op) {
        case 'open':
          expect((await api.post(base, { title: `T${i}`, head_ref: pick(branches), description: `d${i}` })).status).to.equal(201);
          counts[slug]!++;
          break;
        case 'edit':
          await api.patch(`${base}/${n}`, rnd() < 0.5 ? { title: `E${i}` } : { description: `D${i}` });
          break;
        case 'close':
          await api.post(`${base}/${n}/close`);
          break;
        case 'reopen':
          await api.post(`${base}/${n}/reopen`);
          break;
        case 'push':
          await fx.repo.commit(pick(branches), { [`p${i}.txt`]: `${i}\n` });
          await api.get(`${base}/${n}`); // refresh on read
          break;
        case 'read':
          await api.get(`${base}/${n}`);
          break;
        case 'merge':
          await api.post(`${base}/${n}/merge`, {}); // 200, 409 (not open, conflict): all fine
          break;
      }
    }
    const verify = await rebuildProjections(fx.srv.db.db, { verify: true });
    expect(verify.rows).to.be.greaterThan(0);
    expect(verify.differences, `seed ${seed}`).to.deep.equal([]);
    const live = await fx.srv.db.db.rows({ text: 'SELECT * FROM change_requests ORDER BY cr_id', values: [] });
    const rebuilt = await rebuildProjections(fx.srv.db.db, { verify: false });
    expect(rebuilt.applied).to.equal(true);
    const after = await fx.srv.db.db.rows({ text: 'SELECT * FROM change_requests ORDER BY cr_id', values: [] });
    expect(after).to.deep.equal(live);
  });

  it('detects a drifted row (verify changes nothing), and a rebuild repairs it', async () => {
    const [p] = await seeded();
    await fx.srv.db.db.run({ text: `UPDATE change_requests SET title = 'tampered' WHERE number = 1 AND project_id = $1`, values: [p!.projectId] });
    const verify = await rebuildProjections(fx.srv.db.db, { verify: true });
    // One tampered row: it differs on both sides, and nothing else does.
    expect(verify.differences.map((d) => d.side).sort()).to.deep.equal(['live_only', 'rebuilt_only']);
    expect(new Set(verify.differences.map((d) => d.cr_id)).size).to.equal(1);
    expect((await fx.srv.db.db.rows({ text: `SELECT 1 FROM change_requests WHERE title = 'tampered'`, values: [] })).length).to.be.greaterThan(0);
    await rebuildProjections(fx.srv.db.db, { verify: false });
    expect((await rebuildProjections(fx.srv.db.db, { verify: true })).differences).to.deep.equal([]);
    expect((await fx.srv.db.db.rows({ text: `SELECT 1 FROM change_requests WHERE title = 'tampered'`, values: [] })).length).to.equal(0);
  });

  it('agrees with the cascade: a deleted project’s CRs stay gone after a rebuild, its events stay in the log', async () => {
    const [kept, gone] = await seeded();
    // The manifest's syncs (a job each new project's first tip read asks for) append on their own time: left out of the count.
    const before = await fx.srv.db.db.one<{ n: number }>({ text: `SELECT count(*)::int AS n FROM events WHERE stream_id NOT LIKE 'manifest-%'`, values: [] });
    await fx.srv.db.db.run({ text: `DELETE FROM projects WHERE slug = $1`, values: [gone!.slug] });
    expect((await rebuildProjections(fx.srv.db.db, { verify: true })).differences).to.deep.equal([]);
    await rebuildProjections(fx.srv.db.db, { verify: false });
    const rows = await fx.srv.db.db.rows<{ slug: string }>({
      text: `SELECT p.slug FROM change_requests c JOIN projects p USING (project_id) WHERE p.slug = ANY($1) GROUP BY p.slug`,
      values: [[kept!.slug, gone!.slug]],
    });
    expect(rows.map((r) => r.slug)).to.deep.equal([kept!.slug]);
    const orphans = await fx.srv.db.db.one<{ n: number }>({ text: `SELECT count(*)::int AS n FROM events WHERE project_id = $1`, values: [gone!.projectId] });
    expect(orphans!.n, 'the deleted project’s events are still in the log').to.be.greaterThan(0);
    expect((await fx.srv.db.db.one<{ n: number }>({ text: `SELECT count(*)::int AS n FROM events WHERE stream_id NOT LIKE 'manifest-%'`, values: [] }))!.n).to.equal(before!.n);
  });

  it('`svc-server projections rebuild --verify` exits 0 when clean and 1 on a difference', async () => {
    const bin = path.join(projectRoot, 'dist/ops/svc-server.js');
    const [p] = await seeded();
    const env = { ...process.env, DATABASE_URL: fx.srv.db.url, SVC_DATA_DIR: fx.srv.dataDir, LOG_LEVEL: 'silent' };
    const ok = await run(process.execPath, [bin, 'projections', 'rebuild', '--verify'], { env });
    expect(ok.stdout).to.match(/^verified change_requests: \d+ rows from \d+ events/);
    await fx.srv.db.db.run({ text: `UPDATE change_requests SET description = 'drift' WHERE number = 1 AND project_id = $1`, values: [p!.projectId] });
    const bad = await run(process.execPath, [bin, 'projections', 'rebuild', '--verify'], { env }).then(
      () => null,
      (err: { code: number; stdout: string }) => err,
    );
    expect(bad?.code).to.equal(1);
    expect(bad?.stdout).to.match(/differs \(live_only\)/);
    await run(process.execPath, [bin, 'projections', 'rebuild'], { env });
    await run(process.execPath, [bin, 'projections', 'rebuild', '--verify'], { env });
  });
});
