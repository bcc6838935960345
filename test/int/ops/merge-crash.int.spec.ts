import { expect } from 'chai';
import { bootstrapUser } from '../../../services/accounts/service.js';
import { client } from '../../support/http.js';
import { spawnTestServer, type SpawnedServer } from '../../support/server.js';
import { processFixture } from '../../support/suite.js';
import { until } from '../../support/wait.js';
import { eventTypes, mergeJobs } from '../../support/merges.js';

/** The merge request never gets an answer: the server killed itself at its failpoint. */
async function mergeKills(api: ReturnType<typeof client>, mergePath: string, server: SpawnedServer): Promise<void> {
  const answer = await api.post(mergePath, {}).then(
    (r) => r.status,
    () => 'connection lost',
  );
  expect(answer).to.equal('connection lost');
  await server.stop();
  expect(server.proc.signalCode).to.equal('SIGKILL');
}

/**
 * A real `svc-server start` process dies (SIGKILL, via a failpoint) after the base branch
 * moved and before `ChangeRequestMerged` was appended. Restarted, it records the merge
 * exactly once, and the base holds the merge exactly once.
 */
describe('merge crash recovery (real process, SIGKILL)', function () {
  this.timeout(90_000);
  const fx = processFixture('svc-crash-');

  for (const [shape, movesOn] of [['merge-commit', false], ['fast-forward', false], ['merge-commit', true]] as const) {
    it(`records a ${shape} published before the crash exactly once after restart${movesOn ? ', after base and head moved on' : ''}`, async () => {
      const env = { DATABASE_URL: fx.db.url, SVC_DATA_DIR: fx.dataDir, LOG_LEVEL: 'warn' };
      const { token } = (await bootstrapUser(fx.db.db, { email: 'crash@example.test' })).token;
      const branch = `crash-${shape}${movesOn ? '-moved' : ''}`;
      if (shape === 'merge-commit') await fx.repo.commit('main', { [`main-${branch}.txt`]: 'moved\n' });
      const head = await fx.repo.commit(branch, { [`${branch}.txt`]: 'work\n' }, { from: shape === 'merge-commit' ? 'main~1' : 'main' });

      const first = await spawnTestServer({ ...env, SVC_FAILPOINTS: 'merge.after-publish' });
      const api1 = client(first.url, token);
      const slug = `crash-${shape}${movesOn ? '-moved' : ''}`;
      await api1.post('/v1/projects', { name: slug, slug, repo_url: fx.repo.url });
      const base = `/v1/projects/${slug}/change-requests`;
      const cr = (await api1.post(base, { title: 'Crash me', head_ref: branch })).body.change_request;
      const mainBefore = fx.repo.tip('main');

      await mergeKills(api1, `${base}/${cr.number}/merge`, first);

      // The base moved; the log does not know yet.
      const published = fx.repo.tip('main')!;
      expect(published).to.not.equal(mainBefore);
      fx.repo.git('fetch', '-q', 'origin');
      fx.repo.git('merge-base', '--is-ancestor', head, published);
      const types = () => eventTypes(fx.db.db, cr.cr_id);
      expect(await types()).to.deep.equal(['ChangeRequestOpened']);

      let unreviewed: string | null = null;
      if (movesOn) {
        // Before anyone restarts the worker: someone pushes to base, the agent pushes more to head.
        await fx.repo.commit('main', { [`later-${branch}.txt`]: 'later\n' });
        unreviewed = await fx.repo.commit(branch, { [`unreviewed-${branch}.txt`]: 'x\n' });
      }
      const baseNow = fx.repo.tip('main');

      const second = await spawnTestServer(env);
      try {
        const api2 = client(second.url, token);
        const after = (await api2.get(`${base}/${cr.number}`)).body.change_request;
        expect(after.status).to.equal('merged');
        expect(after.merge_commit_sha).to.equal(published);
        expect(after.base_commit_sha).to.equal(mainBefore);
        expect(after.head_commit_sha).to.equal(head);
        expect(await types()).to.deep.equal(['ChangeRequestOpened', 'ChangeRequestMerged']);
        expect(fx.repo.tip('main'), 'nothing merged twice').to.equal(baseNow);
        // A retry of the original request is a 409 now, not a second merge.
        expect((await api2.post(`${base}/${cr.number}/merge`, {})).status).to.equal(409);
        expect(fx.repo.tip('main')).to.equal(baseNow);
        if (unreviewed) {
          fx.repo.git('fetch', '-q', 'origin');
          const inBase = (() => {
            try {
              fx.repo.git('merge-base', '--is-ancestor', unreviewed, fx.repo.tip('main')!);
              return true;
            } catch {
              return false;
            }
          })();
          expect(inBase, 'the commit pushed after the merge was not merged').to.equal(false);
        }
      } finally {
        expect(await second.stop()).to.equal(0);
      }
    });
  }

  // A merge run by the process that took the request (Queue.run), killed after the claim
  // (nothing ran; the job is the dead process's) or after the ref moved (not recorded).
  for (const point of ['queue.run-here.after-claim', 'git.push.after-remote-moved']) {
    it(`${point}: the restarted server merges it exactly once, with no retry by the client`, async () => {
      const env = { DATABASE_URL: fx.db.url, SVC_DATA_DIR: fx.dataDir, LOG_LEVEL: 'warn' };
      const { token } = (await bootstrapUser(fx.db.db, { email: `${point}@example.test` })).token;
      const slug = point.replace(/[^a-z]+/g, '-').replace(/-$/, '');
      const branch = `kill-${slug}`;
      await fx.repo.commit('main', { [`main-${slug}.txt`]: 'moved\n' });
      const head = await fx.repo.commit(branch, { [`${slug}.txt`]: 'work\n' }, { from: 'main~1' });
      const mainBefore = fx.repo.tip('main');

      const first = await spawnTestServer({ ...env, SVC_FAILPOINTS: point });
      const api1 = client(first.url, token);
      expect((await api1.post('/v1/projects', { name: slug, slug, repo_url: fx.repo.url })).status).to.equal(201);
      const base = `/v1/projects/${slug}/change-requests`;
      const cr = (await api1.post(base, { title: 'Kill me', head_ref: branch })).body.change_request;
      await mergeKills(api1, `${base}/${cr.number}/merge`, first);
      expect(await eventTypes(fx.db.db, cr.cr_id)).to.deep.equal(['ChangeRequestOpened']);
      if (point === 'queue.run-here.after-claim') expect(fx.repo.tip('main'), 'nothing published yet').to.equal(mainBefore);

      const second = await spawnTestServer(env);
      try {
        // The dead process's claim is taken back and the job runs again (or the start-up
        // reconcile records the published merge): no request needed.
        await until(async () => (await eventTypes(fx.db.db, cr.cr_id)).includes('ChangeRequestMerged'), 'the merge recorded');
        const api2 = client(second.url, token);
        const after = (await api2.get(`${base}/${cr.number}`)).body.change_request;
        expect(after.status).to.equal('merged');
        expect(after.merge_commit_sha).to.equal(fx.repo.tip('main'));
        expect(await eventTypes(fx.db.db, cr.cr_id)).to.deep.equal(['ChangeRequestOpened', 'ChangeRequestMerged']);
        fx.repo.git('fetch', '-q', 'origin');
        expect(fx.repo.git('rev-parse', `${after.merge_commit_sha}^1`), 'one merge on top of the old base').to.equal(mainBefore);
        expect(fx.repo.git('rev-parse', `${after.merge_commit_sha}^2`)).to.equal(head);
        expect((await api2.post(`${base}/${cr.number}/merge`, {})).status).to.equal(409);
        await until(async () => (await mergeJobs(fx.db.db, cr.cr_id)).every((j) => j.state === 'completed'), 'the job settled');
      } finally {
        expect(await second.stop()).to.equal(0);
      }
    });
  }
});
