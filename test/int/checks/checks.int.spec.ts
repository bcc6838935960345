import { expect } from 'chai';
import { withProject } from '../../support/server.js';
import { client } from '../../support/http.js';
import { rebuildProjections } from '../../../projections/rebuild.js';
import { CHECKS_ENV, checksOf, crEvents, projectPath, putManifest, settled } from './support.js';

const CHECK = `[[checks]]
name = "test"
run = "sh check.sh"
timeout_minutes = 2
`;

describe('checks: runs on the merge result, bound to the (base, head) pair', function () {
  this.timeout(180_000);

  it('a failing check, then a passing one on the new pair; results are CR events, the log is text/plain', () =>
    withProject({ slug: 'chk-pairs', env: CHECKS_ENV }, async (p) => {
      await putManifest(p, CHECK, { 'check.sh': 'test -f ok.txt || { echo "ok.txt is missing"; exit 3; }\necho all good\n' });
      const base = p.repo.tip('main')!;
      const head1 = await p.repo.commit('topic', { 'work.txt': 'work\n' });
      const cr = (await p.api.post(p.base, { title: 'work', head_ref: 'topic' })).body.change_request;
      const failed = await settled(p, cr.number, 'test', { base, head: head1 });
      expect(failed.status).to.equal('failed');
      expect(failed.merge_sha).to.equal(head1); // a fast-forward: the head is the merge result
      const log = await p.api.get(failed.log_url);
      expect(log.status).to.equal(200);
      expect(log.headers.get('content-type')).to.match(/^text\/plain/);
      expect(log.headers.get('x-content-type-options')).to.equal('nosniff');
      expect(log.body).to.contain('ok.txt is missing');

      const head2 = await p.repo.commit('topic', { 'ok.txt': 'ok\n' });
      const passed = await settled(p, cr.number, 'test', { base, head: head2 });
      expect(passed.status).to.equal('passed');
      expect(passed.run_id).to.not.equal(failed.run_id);
      const types = (await crEvents(p, cr.cr_id)).map((e) => e.type);
      expect(types.filter((t) => t.startsWith('Check'))).to.deep.equal(['CheckQueued', 'CheckStarted', 'CheckFailed', 'CheckQueued', 'CheckStarted', 'CheckPassed']);
      // The CR's history (the API's, checked against the document) carries them with their data.
      const history = await p.api.get(`${p.base}/${cr.number}/events`);
      expect(history.status).to.equal(200);
      expect(history.body.events.find((e: { type: string }) => e.type === 'CheckFailed').data).to.include({ run_id: failed.run_id, exit_code: 3, reason: 'exit' });
      // The CR's own JSON is the spec's, and history as of before the fix says failed.
      const one = (await p.api.get(`${p.base}/${cr.number}`)).body.change_request;
      expect(one.head_commit_sha).to.equal(head2);
      const failedAt = (await p.srv.db.db.one<{ t: Date }>({ text: "SELECT recorded_at AS t FROM events WHERE stream_id = $1 AND type = 'CheckFailed'", values: [`cr-${cr.cr_id}`] }))!.t;
      const then = await p.api.get(`${p.base}/${cr.number}/checks?as_of=${encodeURIComponent(new Date(failedAt).toISOString())}`);
      expect(then.body.checks[0]).to.include({ status: 'failed', head_sha: head1 });
      const cr1 = (await p.api.get(`${p.base}/${cr.number}?as_of=${encodeURIComponent(new Date(failedAt).toISOString())}`)).body.change_request;
      expect(cr1.head_commit_sha).to.equal(head1);
      // The projection replays the new events: the rows rebuilt from the log are the live ones.
      const verify = await rebuildProjections(p.srv.db.db, { verify: true });
      expect(verify.differences).to.deep.equal([]);
      expect(verify.events).to.be.above(types.length);
    }));

  it('a head that passes alone but fails merged with the base: the check fails', () =>
    withProject({ slug: 'chk-merged', env: CHECKS_ENV }, async (p) => {
      await putManifest(p, CHECK, { 'check.sh': '[ ! -f expected.txt ] || [ "$(cat value.txt)" = "$(cat expected.txt)" ] || { echo mismatch; exit 1; }\n' });
      const head = await p.repo.commit('topic', { 'value.txt': '1\n' });
      const base = await p.repo.commit('main', { 'expected.txt': '2\n' });
      const cr = (await p.api.post(p.base, { title: 'value', head_ref: 'topic' })).body.change_request;
      const c = await settled(p, cr.number, 'test', { base, head });
      expect(c.status).to.equal('failed');
      expect(c.merge_sha).to.not.equal(head).and.to.not.equal(base);
      expect((await p.api.get(c.log_url)).body).to.contain('mismatch');
    }));

  it('statuses: a check\'s name is refused (400), javascript: is refused (400), required ones are listed', () =>
    withProject({ slug: 'chk-status', env: CHECKS_ENV }, async (p) => {
      await putManifest(p, `${CHECK}\n[review]\nrequired_statuses = ["ci/e2e"]\n`, { 'check.sh': 'true\n' });
      const head = await p.repo.commit('topic', { 'a.txt': 'a\n' });
      const cr = (await p.api.post(p.base, { title: 'a', head_ref: 'topic' })).body.change_request;
      const S = `${projectPath(p)}/statuses/${head}`;
      const named = await p.api.post(S, { context: 'test', state: 'success' });
      expect(named.status, JSON.stringify(named.body)).to.equal(400);
      expect(named.body.issues[0].path).to.equal('context');
      const js = await p.api.post(S, { context: 'ci/e2e', state: 'success', target_url: 'javascript:alert(1)' });
      expect(js.status).to.equal(400);
      expect((await p.api.post(S, { context: 'ci/e2e', state: 'bogus' })).status).to.equal(400);
      expect((await p.api.post(`${projectPath(p)}/statuses/not-a-sha`, { context: 'x', state: 'success' })).status).to.equal(400);
      const before = await checksOf(p, cr.number);
      expect(before.statuses).to.deep.include({ context: 'ci/e2e', state: 'pending', description: 'Expected: required by svc.toml, not reported yet', target_url: null, sha: head, required: true, created_at: null, updated_at: null });
      const ok = await p.api.post(S, { context: 'ci/e2e', state: 'success', description: 'green', target_url: 'https://ci.example.test/1' });
      expect(ok.status, JSON.stringify(ok.body)).to.equal(201);
      expect(ok.body.status).to.include({ context: 'ci/e2e', state: 'success', required: true, target_url: 'https://ci.example.test/1' });
      const after = await checksOf(p, cr.number);
      expect(after.statuses.map((s) => [s.context, s.state])).to.deep.equal([['ci/e2e', 'success']]);
      // Another account: the project does not exist for it (404), neither to post nor to read.
      const other = client(p.srv.url, (await p.srv.newUser('other@example.test')).token);
      expect((await other.post(S, { context: 'ci/e2e', state: 'failure' })).status).to.equal(404);
      expect((await other.get(`${p.base}/${cr.number}/checks`)).status).to.equal(404);
      expect((await checksOf(p, cr.number)).statuses[0].state).to.equal('success');
    }));

  it('a secret printed by a check is masked in its log and absent from every event; only named secrets reach it', () =>
    withProject({ slug: 'chk-secret', env: CHECKS_ENV }, async (p) => {
      const SECRET = 'sk-live-4f9a1c0e7b2d';
      const OTHER = 'not-named-83jd9w2k';
      const pp = projectPath(p);
      expect((await p.api.call('PUT', `${pp}/secrets/API_KEY`, { value: SECRET })).status).to.equal(204);
      expect((await p.api.call('PUT', `${pp}/secrets/OTHER_KEY`, { value: OTHER })).status).to.equal(204);
      await putManifest(p, '[[checks]]\nname = "leaky"\nrun = "echo key=$API_KEY; echo other=${OTHER_KEY:-unset}; env | grep -c ^SVC_TOKEN= || true; echo model=${SVC_LLM_API_KEY:-none}"\nsecrets = ["API_KEY"]\n');
      const base = p.repo.tip('main')!;
      const head = await p.repo.commit('topic', { 'a.txt': 'a\n' });
      const cr = (await p.api.post(p.base, { title: 'a', head_ref: 'topic' })).body.change_request;
      const c = await settled(p, cr.number, 'leaky', { base, head });
      expect(c.status).to.equal('passed');
      const log = (await p.api.get(c.log_url)).body as string;
      expect(log).to.contain('key=***').and.not.contain(SECRET);
      expect(log).to.contain('other=unset').and.contain('model=none');
      expect(log.split('\n')[2]).to.equal('0'); // no SVC_TOKEN in its environment
      const leaked = await p.srv.db.db.rows({ text: 'SELECT type FROM events WHERE data::text LIKE $1 OR metadata::text LIKE $1', values: [`%${SECRET}%`] });
      expect(leaked).to.deep.equal([]);
      // Deletable: gone, and 404 after.
      expect((await p.api.call('DELETE', c.log_url)).status).to.equal(204);
      expect((await p.api.get(c.log_url)).status).to.equal(404);
    }));
});
