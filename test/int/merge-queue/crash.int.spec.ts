import { expect } from 'chai';
import { bootstrapUser } from '../../../services/accounts/service.js';
import { client } from '../../support/http.js';
import { fixtureRepo, type FixtureRepo } from '../../support/repo.js';
import { spawnTestServer, type SpawnedServer } from '../../support/server.js';
import { processFixture } from '../../support/suite.js';
import { eventually, until } from '../../support/wait.js';
import { checkScript, crEventsOf, firstParents, queueManifest } from './support.js';

/**
 * A real `svc-server start` (API and worker in one process) SIGKILLs itself at each step of
 * a batch (a failpoint): a result built but its checks not queued, a check running, the
 * landing recorded but the base not moved, the base moved but nothing recorded, one CR
 * recorded and not the next. Restarted without the failpoint, the queue finishes: each CR
 * merged exactly once, `main` only ever on commits whose checks passed.
 */
describe('merge queue crash safety (real process, SIGKILL at each step)', function () {
  this.timeout(240_000);
  const fx = processFixture('svc-mq-crash-');

  /** Every commit a queue run passed on, across the CRs. */
  async function passedResults(crIds: string[]): Promise<Set<string>> {
    const out = new Set<string>();
    for (const id of crIds) {
      const events = await crEventsOf(fx.db.db, id);
      const passed = new Set(events.filter((e) => e.type === 'CheckPassed').map((e) => e.data.run_id));
      for (const e of events) if (e.type === 'CheckQueued' && e.data.via === 'queue' && passed.has(e.data.run_id)) out.add(e.data.merge_sha);
    }
    return out;
  }

  for (const point of ['merge-queue.built', 'merge-queue.checks-running', 'merge-queue.landing', 'merge-queue.after-cas', 'merge-queue.records']) {
    it(`${point}: the restarted server finishes the queue, nothing merged twice, nothing unchecked on main`, async () => {
      const env = { DATABASE_URL: fx.db.url, SVC_DATA_DIR: fx.dataDir, LOG_LEVEL: 'warn', SVC_SCHEDULER: '0', SVC_CHECKS_REFRESH_MS: '200' };
      const { token } = (await bootstrapUser(fx.db.db, { email: `${point}@example.test` })).token;
      const slug = point.replace(/[^a-z]+/g, '-');
      const repo: FixtureRepo = await fixtureRepo();
      let first: SpawnedServer | undefined;
      let second: SpawnedServer | undefined;
      try {
        const base0 = await repo.commit('main', { 'svc.toml': queueManifest(), 'check.sh': checkScript(1) });
        const heads = [await repo.commit(`${slug}-1`, { 'one.txt': '1\n' }), await repo.commit(`${slug}-2`, { 'two.txt': '2\n' })];

        first = await spawnTestServer({ ...env, SVC_FAILPOINTS: point });
        const api1 = client(first.url, token);
        expect((await api1.post('/v1/projects', { name: slug, slug, repo_url: repo.url })).status).to.equal(201);
        const P = `/v1/projects/${slug}`;
        await eventually(async () => (await api1.get(`${P}/manifest`)).body.source_sha === base0, 'the manifest in force', { timeoutMs: 30_000 });
        const crs = [
          (await api1.post(`${P}/change-requests`, { title: 'One', head_ref: `${slug}-1` })).body.change_request as { cr_id: string; number: number },
          (await api1.post(`${P}/change-requests`, { title: 'Two', head_ref: `${slug}-2` })).body.change_request as { cr_id: string; number: number },
        ];
        const queued = [false, false];
        for (const [i, cr] of crs.entries()) {
          // The server may kill itself while these run (a step follows the first one at once).
          const r = await api1.post(`${P}/change-requests/${cr.number}/merge`, { when: 'checks_pass', expected_head_sha: heads[i] }).catch(() => null);
          queued[i] = r?.status === 202;
        }
        expect(queued[0], 'the first CR entered the queue').to.equal(true);
        await until(() => first!.proc.signalCode !== null, `the server to kill itself at ${point}`, { timeoutMs: 120_000 });
        await first.stop();
        expect(first.proc.signalCode).to.equal('SIGKILL');

        // Whatever the crash left: main is the old base, or a result whose checks passed.
        const mainAtCrash = repo.tip('main')!;
        if (mainAtCrash !== base0) expect([...(await passedResults(crs.map((c) => c.cr_id)))], 'main moved only to a checked commit').to.include(mainAtCrash);

        second = await spawnTestServer(env);
        const api2 = client(second.url, token);
        for (const [i, cr] of crs.entries()) {
          if (queued[i]) continue;
          expect((await api2.post(`${P}/change-requests/${cr.number}/merge`, { when: 'checks_pass', expected_head_sha: heads[i] })).status).to.equal(202);
        }
        await eventually(
          async () => (await Promise.all(crs.map(async (c) => (await api2.get(`${P}/change-requests/${c.number}`)).body.change_request.status))).every((s) => s === 'merged'),
          'both CRs merged after the restart',
          { timeoutMs: 120_000, state: async () => (await api2.get(`${P}/merge-queue`)).body },
        );
        const checked = await passedResults(crs.map((c) => c.cr_id));
        const landed: string[] = [];
        for (const [i, cr] of crs.entries()) {
          const merges = (await crEventsOf(fx.db.db, cr.cr_id)).filter((e) => e.type === 'ChangeRequestMerged');
          expect(merges, `CR ${i + 1} merged exactly once`).to.have.length(1);
          expect(merges[0]!.data).to.include({ via: 'queue', head_commit_sha: heads[i] });
          expect(checked.has(merges[0]!.data.merge_commit_sha), 'its merge commit is one its checks passed on').to.equal(true);
          landed.push(merges[0]!.data.merge_commit_sha);
        }
        const history = firstParents(repo.bare, base0);
        expect(history, "main's first-parent history: exactly the checked results, once each").to.deep.equal(landed);
        for (const sha of history) expect(checked.has(sha)).to.equal(true);
      } finally {
        if (first && first.proc.exitCode === null && first.proc.signalCode === null) await first.stop();
        if (second) expect(await second.stop()).to.equal(0);
        await repo.cleanup();
      }
    });
  }
});
