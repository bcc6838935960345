import { expect } from 'chai';
import { withProject } from '../../support/server.js';
import { eventually, mergeChange, projectPath } from './support.js';

const GOOD = '[env]\nrequired = ["OPENAI_API_KEY"]\n\n[[triggers]]\nslug = "nightly"\nschedule = "0 3 * * *"\nprompt = "clean up"\n';

describe('manifest sync (GET .../manifest)', function () {
  this.timeout(60_000);

  it('reads svc.toml at the default branch tip, re-syncs after each merge, and keeps the last valid one when a bad one merges', () =>
    withProject({ slug: 'mf' }, async (p) => {
      const path = `${projectPath(p)}/manifest`;
      const first = await p.api.get(path);
      expect(first.status).to.equal(200);
      expect(first.body).to.deep.include({ source_sha: p.repo.tip('main'), errors: [], warnings: [] });
      expect(first.body.manifest.triggers).to.deep.equal([]);

      const goodSha = await mergeChange(p, 'add-manifest', { 'svc.toml': GOOD });
      const synced = await eventually(async () => {
        const r = await p.api.get(path);
        return r.body.source_sha === goodSha ? r.body : null;
      }, 'the sync of the merged manifest');
      expect(synced.manifest.env.required).to.deep.equal([{ name: 'OPENAI_API_KEY', description: '' }]);
      expect(synced.manifest.triggers.map((t: { slug: string }) => t.slug)).to.deep.equal(['nightly']);

      const badSha = await mergeChange(p, 'break-manifest', { 'svc.toml': '[[triggers]]\nslug = "x"\nschedule = "every day"\nprompt = "p"\nsurprise = 1\n' });
      const rejected = await eventually(async () => {
        const r = await p.api.get(path);
        return r.body.source_sha === badSha ? r.body : null;
      }, 'the sync of the broken manifest');
      expect(rejected.errors).to.have.length.greaterThan(0);
      expect(rejected.errors[0].path).to.equal('triggers.0.schedule');
      expect(rejected.warnings.map((w: { path: string }) => w.path)).to.include('triggers.0.surprise');
      // The last valid manifest stays in force, and so do its triggers.
      expect(rejected.manifest.triggers.map((t: { slug: string }) => t.slug)).to.deep.equal(['nightly']);
      const triggers = await p.api.get(`${projectPath(p)}/triggers`);
      expect(triggers.body.triggers.map((t: { slug: string }) => t.slug)).to.deep.equal(['nightly']);

      // Each sync is an event naming the commit it read.
      const events = await p.srv.db.db.rows<{ type: string; data: { commit_sha: string } }>({
        text: "SELECT type, data FROM events WHERE stream_id LIKE 'manifest-%' ORDER BY global_position",
        values: [],
      });
      expect(events.map((e) => [e.type, e.data.commit_sha])).to.deep.include.members([
        ['ManifestSynced', goodSha],
        ['ManifestRejected', badSha],
      ]);
    }));

  it('a merge into another branch does not re-sync', () =>
    withProject({ slug: 'mf-other' }, async (p) => {
      const path = `${projectPath(p)}/manifest`;
      const before = (await p.api.get(path)).body.source_sha;
      await p.repo.commit('develop', {}, { from: 'main' });
      await p.repo.commit('feat', { 'svc.toml': GOOD }, { from: 'develop' });
      const cr = await p.api.post(p.base, { title: 'x', head_ref: 'feat', base_ref: 'develop' });
      expect((await p.api.post(`${p.base}/${cr.body.change_request.number}/merge`, {})).status).to.equal(200);
      // A later merge into main is synced; nothing in between may have changed the manifest.
      const mainSha = await mergeChange(p, 'readme', { 'README.md': 'x\n' });
      await eventually(async () => (await p.api.get(path)).body.source_sha === mainSha, 'the main sync');
      const events = await p.srv.db.db.rows<{ data: { commit_sha: string } }>({ text: "SELECT data FROM events WHERE stream_id LIKE 'manifest-%'", values: [] });
      expect(events.map((e) => e.data.commit_sha)).to.have.members([before, mainSha]);
    }));
});

describe('manifest, secrets, triggers and apps routes: bad input is a 4xx with the contract body, never a 500', function () {
  this.timeout(60_000);
  it('answers odd names, bodies and methods with 4xx', () =>
    withProject({ slug: 'mf-bad', env: { SVC_SCHEDULER: '0' } }, async (p) => {
      const pp = projectPath(p);
      const odd = ['%00', '%FF', 'a'.repeat(300), '.x', 'A%00B', '%E2%80%AE', 'SVC_X', 'ok-slug'];
      const calls: Array<[string, string, unknown?]> = [];
      for (const n of odd) {
        calls.push(['PUT', `${pp}/secrets/${n}`, { value: 'x' }], ['DELETE', `${pp}/secrets/${n}`], ['GET', `${pp}/triggers/${n}`]);
        calls.push(['POST', `${pp}/triggers/${n}/fire`, {}], ['POST', `${pp}/triggers/${n}/enable`, {}], ['GET', `${pp}/apps/${n}`]);
      }
      calls.push(['PATCH', `${pp}/secrets`, { set: { A: 1 } }], ['PATCH', `${pp}/secrets`, { set: 'x' }], ['PATCH', `${pp}/secrets`, {}]);
      calls.push(['PATCH', `${pp}/secrets`, { unset: [null] }], ['PATCH', `${pp}/secrets`, 'not json'], ['PUT', `${pp}/secrets/A`, { value: 'a\u0000b' }]);
      calls.push(['POST', `${pp}/triggers/x/fire`, { surprise: 1 }], ['GET', '/v1/projects/nope/manifest'], ['GET', '/v1/projects/nope/secrets']);
      for (const [method, path, body] of calls) {
        const r = await p.api.call(method, path, body, typeof body === 'string' ? { 'content-type': 'application/json' } : {});
        expect(r.status, `${method} ${path}`).to.be.within(400, 499);
        expect(r.body.error, `${method} ${path}`).to.be.a('string');
        expect(r.body.message, `${method} ${path}`).to.be.a('string');
      }
    }));
});
