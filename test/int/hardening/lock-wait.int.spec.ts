import { expect } from 'chai';
import pg from 'pg';
import { withProject } from '../../support/server.js';

describe('bounded waits on the merge lock', function () {
  this.timeout(60_000);

  it('while the lock is held, reads answer and closes give up with 503 + Retry-After; the pool never stalls', () =>
    withProject({ slug: 'locked', poolSize: 4, env: { SVC_MERGE_LOCK_WAIT_MS: '400' } }, async ({ srv, repo, api, base }) => {
      for (let i = 0; i < 3; i++) {
        await repo.commit(`l${i}`, { [`l${i}.txt`]: 'x\n' });
        await api.post(base, { title: `L${i}`, head_ref: `l${i}` });
      }
      const project = (await api.get('/v1/projects/locked')).body.project;
      // Someone (a slow push) holds the lock of main, on a connection of its own.
      const holder = new pg.Client(srv.db.url);
      await holder.connect();
      try {
        await holder.query('SELECT pg_advisory_lock(hashtextextended($1, 0))', [`merge:${project.project_id}:main`]);
        const closes = Array.from({ length: 12 }, (_, i) => api.post(`${base}/${(i % 3) + 1}/close`));
        // Reads on the same small pool answer while a dozen closes wait for the lock.
        const t0 = Date.now();
        const reads = await Promise.all([api.get(base), api.get(`${base}/1`), api.get('/v1/projects'), api.get(`${base}/2/events`)]);
        expect(reads.map((r) => r.status)).to.deep.equal([200, 200, 200, 200]);
        expect(Date.now() - t0, 'reads did not queue behind the lock').to.be.below(2000);
        const answered = await Promise.all(closes);
        for (const r of answered) {
          expect(r.status).to.equal(503);
          expect(r.body.error).to.equal('Merge in progress');
          expect(Number(r.headers.get('retry-after'))).to.be.greaterThan(0);
        }
        expect((await api.get(`${base}/1`)).body.change_request.status).to.equal('open');
      } finally {
        await holder.end(); // the lock goes with its session
      }
      const closed = await api.post(`${base}/1/close`);
      expect(closed.status).to.equal(200);
      expect(closed.body.change_request.status).to.equal('closed');
    }));
});
