import { expect } from 'chai';
import { execFileSync } from 'node:child_process';
import { chmod, readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { withProject } from '../../support/server.js';
import { setFailpoint } from '../../../lib/failpoints.js';

describe('merges, closes and the per-base lock', function () {
  this.timeout(90_000);

  it('a close sent while a merge is publishing waits for it: merged wins, and git and the log agree', () =>
    withProject({ slug: 'slow', over: 'http' }, async ({ srv, repo, api, base }) => {
      const head = await repo.commit('topic', { 't.txt': 't\n' });
      const cr = (await api.post(base, { title: 'Slow push', head_ref: 'topic' })).body.change_request;
      // The remote's pre-receive hook (a remote over HTTP: a file:// repository's hooks never
      // run) reports that the push reached it, then holds the push until the test releases
      // it: two FIFOs, no clock.
      const reachedFifo = path.join(repo.bare, 'reached.fifo');
      const releaseFifo = path.join(repo.bare, 'release.fifo');
      execFileSync('mkfifo', [reachedFifo, releaseFifo]);
      const hook = path.join(repo.bare, 'hooks', 'pre-receive');
      await writeFile(hook, `#!/bin/sh\necho reached > '${reachedFifo}'\ncat '${releaseFifo}' >/dev/null\nexit 0\n`);
      await chmod(hook, 0o755);

      const reached = readFile(reachedFifo, 'utf8');
      const merging = api.post(`${base}/${cr.number}/merge`, {});
      expect((await reached).trim(), 'the merge is publishing').to.equal('reached');
      // The close is queued behind the merge: it found the per-base lock taken (the
      // failpoint reports each try that found it busy).
      let signal: () => void = () => {};
      const closeWaits = new Promise<void>((r) => (signal = r));
      const unset = setFailpoint('merge-lock.busy', () => signal());
      const closing = api.post(`${base}/${cr.number}/close`);
      await closeWaits;
      unset();
      await writeFile(releaseFifo, 'go\n');
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
