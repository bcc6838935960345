import { expect } from 'chai';
import { chmod, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { withProject } from '../../support/server.js';

/** A remote that refuses the update (its hook, a protected branch) is not "the base moved". The remote is served over HTTP: a `file://` repository's own hooks never run. */
describe('merge refused by the remote', function () {
  this.timeout(60_000);

  it('answers 503 "Push rejected" with the remote’s reason; the CR stays open and the base untouched', () =>
    withProject({ slug: 'guarded', over: 'http' }, async ({ repo, api, base }) => {
      await repo.commit('topic', { 't.txt': 't\n' });
      const cr = (await api.post(base, { title: 'Blocked', head_ref: 'topic' })).body.change_request;
      const hook = path.join(repo.bare, 'hooks', 'pre-receive');
      await writeFile(hook, '#!/bin/sh\necho "main is protected" >&2\nexit 1\n');
      await chmod(hook, 0o755);
      const mainBefore = repo.tip('main');

      const res = await api.post(`${base}/${cr.number}/merge`, {});
      expect(res.status).to.equal(503);
      expect(res.body.error).to.equal('Push rejected');
      expect(res.body.message).to.match(/pre-receive hook declined/);
      expect(repo.tip('main')).to.equal(mainBefore);
      expect((await api.get(`${base}/${cr.number}`)).body.change_request.status).to.equal('open');
    }));
});
