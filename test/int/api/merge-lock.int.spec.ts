import { expect } from 'chai';
import { chmod, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { withProject } from '../../support/server.js';

describe('merges, closes and the per-base lock', function () {
  this.timeout(90_000);

  it('a close sent while a merge is publishing waits for it: merged wins, and git and the log agree', () =>
    withProject({ slug: 'slow' }, async ({ srv, repo, api, base }) => {
      const head = await repo.commit('topic', { 't.txt': 't\n' });
      const cr = (await api.post(base, { title: 'Slow push', head_ref: 'topic' })).body.change_request;
      // The remote takes a while to accept the push.
      const hook = path.join(repo.bare, 'hooks', 'pre-receive');
      await writeFile(hook, '#!/bin/sh\nsleep 1.5\nexit 0\n');
      await chmod(hook, 0o755);

      const merging = api.post(`${base}/${cr.number}/merge`, {});
      await new Promise((r) => setTimeout(r, 600));
      const closing = api.post(`${base}/${cr.number}/close`);
      const [merged, closed] = await Promise.all([merging, closing]);
      expect(merged.status).to.equal(200);
      expect(closed.status, 'merged is terminal: the close that waited is refused').to.equal(409);
      const now = (await api.get(`${base}/${cr.number}`)).body.change_request;
      expect(now.status).to.equal('merged');
      expect(repo.tip('main')).to.equal(head);
      const left = await srv.db.db.rows({ text: 'SELECT cr_id FROM merge_attempts', values: [] });
      expect(left).to.deep.equal([]);
    }));

  it('merges concurrently into one base on a small pool without deadlocking the pool or the API', () =>
    withProject({ slug: 'small', poolSize: 5, mergeConcurrency: 4 }, async ({ repo, api, base }) => {
      for (let i = 0; i < 6; i++) {
        await repo.commit(`s${i}`, { [`s${i}.txt`]: `${i}\n` });
        await api.post(base, { title: `S${i}`, head_ref: `s${i}` });
      }
      const results = await Promise.all([1, 2, 3, 4, 5, 6].map((n) => api.post(`${base}/${n}/merge`, {})));
      expect(results.map((r) => r.status)).to.deep.equal([200, 200, 200, 200, 200, 200]);
      expect((await api.get('/v1/projects')).status).to.equal(200);
    }));
});
