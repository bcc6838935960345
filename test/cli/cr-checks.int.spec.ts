import { expect } from 'chai';
import nock from 'nock';
import { useNock } from './nock-scope.js';
import { PROJECT, makeCR, runSvc, sandbox, type Sandbox } from './helpers.js';

const API = 'http://api.checks.test:8080';
const TOKEN = 'svc_pat_checkstest';
const P = PROJECT.project_id;
const CRS = `/v1/projects/${P}/change-requests`;
const RUN = '1b2c3d4e-5f60-4718-89a0-b1c2d3e4f506';
const USER = '9e8d7c6b-5a49-4382-a1b0-c9d8e7f6a5b4';

const CHECKS = {
  checks: [
    {
      run_id: RUN, name: 'test', status: 'failed', base_sha: 'b'.repeat(40), head_sha: 'a'.repeat(40), merge_sha: 'c'.repeat(40),
      started_at: '2026-01-01T12:00:00.000Z', finished_at: '2026-01-01T12:01:00.000Z', exit_code: 3, reason: 'exit', log_url: `${CRS}/3/checks/${RUN}/log`,
    },
  ],
  statuses: [{ context: 'ci/e2e', state: 'success', description: 'green', target_url: 'https://ci.example.test/1', sha: 'a'.repeat(40), required: true, created_at: '2026-01-01T12:00:00.000Z', updated_at: '2026-01-01T12:00:00.000Z' }],
  auto_merge: { status: 'pending', head_sha: 'a'.repeat(40), requested_by: USER, requested_at: '2026-01-01T12:00:00.000Z', finished_at: null, reason: null },
};

describe('svc cr checks, merge --when-green, the checks line of cr show (HTTP stubbed with nock)', () => {
  let sb: Sandbox;
  const env = { SVC_API_URL: `${API}/v1`, SVC_CLI_TOKEN: TOKEN, SVC_PROJECT_ID: P, NO_COLOR: '1' };
  const api = () => nock(API, { reqheaders: { authorization: `Bearer ${TOKEN}` } });
  useNock();
  beforeEach(async () => (sb = await sandbox()));
  afterEach(() => sb.cleanup());
  const run = (args: string[], tty = false) => runSvc(args, { configPath: sb.configPath, env, cwd: sb.dir, tty });

  it('cr checks: piped, one tab-separated line per check and status, then merge when green', async () => {
    api().get(`${CRS}/3/checks`).reply(200, CHECKS);
    const r = await run(['cr', 'checks', '3']);
    expect(r.code, r.stderr).to.equal(0);
    expect(r.stdout.split('\n')).to.deep.equal([
      `check\ttest\tfailed\t${'b'.repeat(40)}\t${'a'.repeat(40)}\texit\t${CRS}/3/checks/${RUN}/log`,
      `status\tci/e2e\tsuccess\trequired\t${'a'.repeat(40)}\tgreen\thttps://ci.example.test/1`,
      `auto_merge\tpending\t${'a'.repeat(40)}\t`,
      '',
    ]);
  });

  it('cr checks with none says so: on the terminal, and on stderr when piped (stdout stays empty)', async () => {
    const NONE = { checks: [], statuses: [], auto_merge: null };
    api().get(`${CRS}/3/checks`).reply(200, NONE);
    const tty = await run(['cr', 'checks', '3'], true);
    expect(tty.code).to.equal(0);
    expect(tty.stdout).to.match(/^no checks: none are configured \(\[\[checks\]\] in svc\.toml\)/);
    api().get(`${CRS}/3/checks`).reply(200, NONE);
    const piped = await run(['cr', 'checks', '3']);
    expect(piped.code).to.equal(0);
    expect(piped.stdout).to.equal('');
    expect(piped.stderr).to.match(/^no checks: /m);
  });

  it('cr checks on a TTY: marks, the pair, merge when green; --json is the response', async () => {
    api().get(`${CRS}/3/checks`).reply(200, CHECKS);
    const r = await run(['cr', 'checks', '#3'], true);
    expect(r.stdout).to.contain('✗ test failed (exit) on bbbbbbb+aaaaaaa').and.contain('✓ ci/e2e success (required) green').and.contain('merge when green: pending on aaaaaaa');
    api().get(`${CRS}/3/checks`).reply(200, CHECKS);
    expect(JSON.parse((await run(['cr', 'checks', '3', '--json'])).stdout)).to.deep.equal(CHECKS);
  });

  it('merge --when-green asks on the head it read (202) and says a push cancels it', async () => {
    api().get(`${CRS}/3`).reply(200, { change_request: makeCR() });
    api().post(`${CRS}/3/merge`, { when: 'checks_pass', expected_head_sha: 'a'.repeat(40) }).reply(202, { auto_merge: CHECKS.auto_merge });
    const r = await run(['cr', 'merge', '3', '--when-green']);
    expect(r.code, r.stderr).to.equal(0);
    expect(r.stderr).to.contain('Change request #3 will be merged when its checks pass on aaaaaaa (a new push cancels this');
  });

  it('merge --when-green where nothing is required: 422, exit 1 with the message', async () => {
    api().get(`${CRS}/3`).reply(200, { change_request: makeCR() });
    api().post(`${CRS}/3/merge`).reply(422, { error: 'No required checks', code: 'no_required_checks', message: 'Nothing would have to pass.' });
    const r = await run(['cr', 'merge', '3', '--when-green']);
    expect(r.code).to.equal(1);
    expect(r.stderr).to.contain('Nothing would have to pass.');
  });

  it('cr show has a checks line', async () => {
    const cr = makeCR();
    api().get(`${CRS}/3`).reply(200, { change_request: cr });
    api().get(`${CRS}/${cr.cr_id}/merge-preview`).reply(200, { base_sha: 'b'.repeat(40), head_sha: 'a'.repeat(40), merge_base: 'b'.repeat(40), is_up_to_date: false, can_merge: true, can_fast_forward: true, conflicts: [] });
    api().get(`${CRS}/${cr.cr_id}/checks`).reply(200, CHECKS);
    const r = await run(['cr', 'show', '3']);
    expect(r.stdout).to.contain('checks:\t1 failed, 1 success · merge when green: pending\n');
  });
});
