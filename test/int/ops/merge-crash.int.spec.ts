import { expect } from 'chai';
import { bootstrapUser } from '../../../infra/accounts.js';
import { client } from '../../support/http.js';
import { spawnTestServer } from '../../support/server.js';
import { processFixture } from '../../support/suite.js';

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

      const merge = await api1.post(`${base}/${cr.number}/merge`, {}).then(
        (r) => r.status,
        () => 'connection lost',
      );
      expect(merge).to.equal('connection lost');
      await first.stop();
      expect(first.proc.signalCode).to.equal('SIGKILL');

      // The base moved; the log does not know yet.
      const published = fx.repo.tip('main')!;
      expect(published).to.not.equal(mainBefore);
      fx.repo.git('fetch', '-q', 'origin');
      fx.repo.git('merge-base', '--is-ancestor', head, published);
      const types = async () =>
        (await fx.db.db.rows<{ type: string }>({ text: `SELECT type FROM events WHERE stream_id = $1 ORDER BY stream_position`, values: [`cr-${cr.cr_id}`] })).map((r) => r.type);
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
});
