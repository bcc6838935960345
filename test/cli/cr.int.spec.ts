import { expect } from 'chai';
import nock from 'nock';
import { useNock } from './nock-scope.js';
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { writeLink } from '../../cli/link.js';
import { PROJECT, makeCR, runSvc, sandbox, type Sandbox } from './helpers.js';

const API = 'http://api.cr.test:8080';

async function closedPort(): Promise<number> {
  const { createServer } = await import('node:net');
  const srv = createServer();
  await new Promise<void>((r) => srv.listen(0, '127.0.0.1', () => r()));
  const port = (srv.address() as { port: number }).port;
  await new Promise<void>((r) => srv.close(() => r()));
  return port;
}
const TOKEN = 'svc_pat_crtest';
const P = PROJECT.project_id;
const CRS = `/v1/projects/${P}/change-requests`;

describe('svc cr (HTTP stubbed with nock)', () => {
  let sb: Sandbox;
  const env = (extra: Record<string, string> = {}) => ({ SVC_API_URL: `${API}/v1`, SVC_CLI_TOKEN: TOKEN, SVC_PROJECT_ID: P, ...extra });
  const api = () => nock(API, { reqheaders: { authorization: `Bearer ${TOKEN}` } });

  useNock();
  beforeEach(async () => (sb = await sandbox()));
  afterEach(() => sb.cleanup());
  const run = (args: string[], o: { tty?: boolean; env?: Record<string, string>; cwd?: string; pager?: boolean; stdin?: string } = {}) =>
    runSvc(args, { configPath: sb.configPath, env: o.env ?? env(), ...(o.cwd ? { cwd: o.cwd } : { cwd: sb.dir }), ...(o.tty !== undefined ? { tty: o.tty } : {}), ...(o.pager ? { pager: true } : {}), ...(o.stdin !== undefined ? { stdin: o.stdin } : {}) });

  /** `svc <args>` exits 1 and says `error` on stderr. */
  const failsWith = async (args: string[], error: string) => {
    const r = await run(args);
    expect(r.code, r.stderr).to.equal(1);
    expect(r.stderr).to.contain(error);
    return r;
  };

  describe('ls', () => {
    const list = [makeCR({ number: 4, title: 'Newer', head_ref: 'feat-b', created_at: '2026-01-01T11:00:00.000Z' }), makeCR()];

    it('defaults to status=open; piped: tab-separated rows with ISO times, no header', async () => {
      api().get(CRS).query({ status: 'open' }).reply(200, { next_cursor: null, change_requests: list });
      const r = await run(['cr', 'ls']);
      expect(r.code).to.equal(0);
      expect(r.stdout).to.equal('4\tNewer\tfeat-b\tmain\topen\t2026-01-01T11:00:00.000Z\n3\tAdd greeting\tsession-abc\tmain\topen\t2026-01-01T11:57:00.000Z\n');
      expect(r.stderr).to.equal(`host: SVC_API_URL (${API})\n`);
    });

    it('on a TTY: header, #numbers, relative times, color', async () => {
      api().get(CRS).query({ status: 'merged' }).reply(200, { next_cursor: null, change_requests: list });
      const r = await run(['cr', 'ls', '--status', 'merged'], { tty: true });
      expect(r.code).to.equal(0);
      const plain = r.stdout.replace(/\x1b\[[0-9;]*m/g, '');
      expect(plain.split('\n')[0]).to.match(/^#\s+TITLE\s+BRANCH\s+STATUS\s+CREATED$/);
      expect(plain).to.contain('#3').and.contain('session-abc → main').and.contain('about 3 minutes ago');
      expect(r.stdout).to.contain('\x1b[');
    });

    it('NO_COLOR on a TTY: same table, no escape codes', async () => {
      api().get(CRS).query({ status: 'open' }).reply(200, { next_cursor: null, change_requests: list });
      const r = await run(['cr', 'ls'], { tty: true, env: env({ NO_COLOR: '1' }) });
      expect(r.stdout).to.not.contain('\x1b[');
      expect(r.stdout).to.contain('#3');
    });

    it('--json prints the API objects and no host line', async () => {
      api().get(CRS).query({ status: 'all' }).reply(200, { next_cursor: null, change_requests: list });
      const r = await run(['cr', 'ls', '--status', 'all', '--json']);
      expect(r.code).to.equal(0);
      expect(JSON.parse(r.stdout)).to.deep.equal(list);
      expect(r.stderr).to.equal('');
    });

    it('an unknown --status is a usage error (exit 2) before any request', async () => {
      const r = await run(['cr', 'ls', '--status', 'weird']);
      expect(r.code).to.equal(2);
      expect(r.stderr).to.match(/^error: Invalid values:/);
      expect(r.stderr.trim().split('\n')).to.have.length(1);
    });

    it('empty list: message on stderr, nothing on stdout, exit 0', async () => {
      api().get(CRS).query({ status: 'open' }).reply(200, { next_cursor: null, change_requests: [] });
      const r = await run(['cr', 'ls']);
      expect(r).to.include({ code: 0, stdout: '' });
      expect(r.stderr).to.contain('No open change requests.');
    });

    it('uses the project of .svc/link.json found from a subdirectory, and its host', async () => {
      await mkdir(path.dirname(sb.configPath), { recursive: true });
      await writeFile(sb.configPath, JSON.stringify({ hosts: { linked: { url: API, token: TOKEN } } }));
      await writeLink(sb.dir, { project_id: P, account_id: PROJECT.account_id, host: 'linked', host_url: API });
      const sub = path.join(sb.dir, 'src', 'deep');
      await mkdir(sub, { recursive: true });
      api().get(CRS).query({ status: 'open' }).reply(200, { next_cursor: null, change_requests: [] });
      const r = await run(['cr', 'ls'], { env: {}, cwd: sub });
      expect(r.code).to.equal(0);
      expect(r.stderr).to.contain(`host: linked (${API})`);
    });

    it('no project anywhere: exit 1 pointing at svc projects link', async () => {
      const r = await run(['cr', 'ls'], { env: { SVC_API_URL: API, SVC_CLI_TOKEN: TOKEN } });
      expect(r.code).to.equal(1);
      expect(r.stderr).to.match(/error: no project: .*svc projects link/);
    });
  });

  describe('show', () => {
    const preview = { base_sha: 'b'.repeat(40), head_sha: 'a'.repeat(40), merge_base: 'b'.repeat(40), is_up_to_date: false, can_merge: true, can_fast_forward: true, conflicts: [] };

    it('accepts #3 and shows the fast-forward preview of an open CR', async () => {
      api().get(`${CRS}/3`).reply(200, { change_request: makeCR() });
      api().get(`${CRS}/${makeCR().cr_id}/merge-preview`).reply(200, preview);
      const r = await run(['cr', 'show', '#3'], { tty: true, env: env({ NO_COLOR: '1' }) });
      expect(r.code).to.equal(0);
      expect(r.stdout).to.contain('Add greeting #3').and.contain('open · session-abc → main').and.contain('Says hello.');
      expect(r.stdout).to.contain('✓ Merge preview: clean: can be merged as a fast-forward');
    });

    it('lists conflicting files', async () => {
      api().get(`${CRS}/3`).reply(200, { change_request: makeCR() });
      api()
        .get(`${CRS}/${makeCR().cr_id}/merge-preview`)
        .reply(200, { ...preview, can_merge: false, can_fast_forward: false, conflicts: ['a.txt', 'src/b.ts'] });
      const r = await run(['cr', 'info', '3'], { tty: true, env: env({ NO_COLOR: '1' }) });
      expect(r.stdout).to.contain('✗ Merge preview: conflicts in 2 files\n    a.txt\n    src/b.ts\n');
    });

    it('piped: key/value lines with the preview label', async () => {
      api().get(`${CRS}/3`).reply(200, { change_request: makeCR() });
      api().get(`${CRS}/${makeCR().cr_id}/merge-preview`).reply(200, { ...preview, can_fast_forward: false });
      const r = await run(['cr', 'show', '3']);
      expect(r.stdout).to.contain('number:\t3\n').and.contain('status:\topen\n').and.contain('preview:\tclean\n').and.contain('created:\t2026-01-01T11:57:00.000Z');
      // Every metadata line is `key:\tvalue`, the URL included; then the description between `--` lines.
      expect(r.stdout).to.match(/\npreview:\tclean\nurl:\thttp\S+\/3\n--\nSays hello\.\n--\n$/);
      const meta = r.stdout.slice(0, r.stdout.indexOf('\n--\n')).split('\n');
      for (const line of meta) expect(line).to.match(/^[a-z_]+:\t/);
    });

    it('an agent\'s CR shows what it cost: tokens, money, unpriced tokens, sandbox and check time', async () => {
      const cr = makeCR();
      api().get(`${CRS}/3`).reply(200, { change_request: cr });
      api().get(`${CRS}/${cr.cr_id}/merge-preview`).reply(200, preview);
      const spent = { input_tokens: 3000, output_tokens: 600, requests: 3, money: [{ currency: 'USD', amount: 0.018 }], unpriced_tokens: 1200 };
      api()
        .get(`${CRS}/${cr.cr_id}/cost`)
        .reply(200, {
          cost: {
            cr_id: cr.cr_id, number: 3, session_id: '0b7c1b9e-1111-4a2b-9c3d-123456789abc', ...spent,
            by_model: [{ model: 'beta', ...spent, priced: false }],
            sandbox_seconds: 185, cpu_seconds: null, check_seconds: 42, check_runs: [], unmetered: false,
          },
        });
      const r = await run(['cr', 'show', '3']);
      expect(r.code).to.equal(0);
      expect(r.stdout).to.contain('tokens:\t3000 in, 600 out (3 model calls)\n').and.contain('cost:\tUSD 0.02 + 1200 unpriced tokens (beta)\n');
      expect(r.stdout).to.contain('sandbox_time:\t3 min 5 s\n').and.contain('check_time:\t42 s\n');
    });

    it('piped, without a description: no bare `--` lines', async () => {
      api().get(`${CRS}/3`).reply(200, { change_request: makeCR({ description: '' }) });
      api().get(`${CRS}/${makeCR().cr_id}/merge-preview`).reply(200, preview);
      const r = await run(['cr', 'show', '3']);
      expect(r.code).to.equal(0);
      expect(r.stdout).to.match(/\nurl:\thttp\S+\/3\n$/);
      expect(r.stdout.split('\n')).to.not.include('--');
    });

    it('a merged CR has no preview request', async () => {
      const merged = makeCR({ status: 'merged', merged_at: '2026-01-01T11:59:00.000Z', merge_commit_sha: 'c'.repeat(40) });
      api().get(`${CRS}/${merged.cr_id}`).reply(200, { change_request: merged });
      const r = await run(['cr', 'show', String(merged.cr_id)]);
      expect(r.code).to.equal(0);
      expect(r.stdout).to.contain('merge_commit:\t' + 'c'.repeat(40)).and.not.contain('preview:');
    });

    it('--json prints the CR object', async () => {
      api().get(`${CRS}/3`).reply(200, { change_request: makeCR() });
      const r = await run(['cr', 'show', '3', '--json']);
      expect(JSON.parse(r.stdout)).to.deep.equal(makeCR());
    });

    it('404: exit 1 with the API message', async () => {
      api().get(`${CRS}/99`).reply(404, { error: 'Not found', message: 'Change request not found.' });
      const r = await failsWith(['cr', 'show', '99'], 'error: Change request not found. (HTTP 404)\n');
      expect(r.stdout).to.equal('');
    });

    it('a bad reference or a missing one is a usage error', async () => {
      expect((await run(['cr', 'show', 'abc'])).code).to.equal(2);
      const r = await run(['cr', 'show']);
      expect(r.code).to.equal(2);
      expect(r.stderr).to.equal('error: missing argument <cr> for "svc cr show"\n');
    });
  });

  describe('diff', () => {
    const diff = {
      base_sha: 'b'.repeat(40),
      head_sha: 'a'.repeat(40),
      merge_base: 'b'.repeat(40),
      files: [{ path: 'hello.txt', status: 'modified', additions: 1, deletions: 1, binary: false, patch_truncated: false }],
      additions: 1,
      deletions: 1,
      truncated: false,
      files_truncated: false,
      total_files: 1,
      limits: { max_file_bytes: 500000, max_file_lines: 20000, max_total_bytes: 5000000, max_total_lines: 100000, max_files: 3000 },
      patch: 'diff --git a/hello.txt b/hello.txt\n--- a/hello.txt\n+++ b/hello.txt\n@@ -1 +1 @@\n-hi\n+hello\n',
    };

    it('piped: the plain patch on stdout, no pager', async () => {
      api().get(`${CRS}/3/diff`).reply(200, diff);
      const r = await run(['cr', 'diff', '3'], { pager: true });
      expect(r.stdout).to.equal(diff.patch);
      expect(r.paged).to.equal(undefined);
    });

    it('on a TTY: colored, through the pager', async () => {
      api().get(`${CRS}/3/diff`).reply(200, diff);
      const r = await run(['cr', 'diff', '3'], { tty: true, pager: true });
      expect(r.paged).to.contain('\x1b[32m+hello\x1b[39m').and.contain('\x1b[31m-hi\x1b[39m');
    });

    it('--no-color on a TTY: plain patch', async () => {
      api().get(`${CRS}/3/diff`).reply(200, diff);
      const r = await run(['cr', 'diff', '3', '--no-color'], { tty: true, pager: true });
      expect(r.paged).to.equal(diff.patch);
    });

    it('CLICOLOR_FORCE colors a pipe', async () => {
      api().get(`${CRS}/3/diff`).reply(200, diff);
      const r = await run(['cr', 'diff', '3'], { env: env({ CLICOLOR_FORCE: '1' }) });
      expect(r.stdout).to.contain('\x1b[32m+hello');
    });

    it('--json prints the diff object', async () => {
      api().get(`${CRS}/3/diff`).reply(200, diff);
      expect(JSON.parse((await run(['cr', 'diff', '3', '--json'])).stdout)).to.deep.equal(diff);
    });
  });

  describe('open', () => {
    /** The compare `cr open` asks first: `head` into `base` (the default branch when not given). */
    const compared = (head: string, base = 'main', upToDate = false) => {
      const sha = (c: string) => c.repeat(40);
      api()
        .get(`/v1/projects/${P}/compare`)
        .query(base === 'main' ? { head } : { head, base })
        .reply(200, {
          base_ref: base, head_ref: head, base_sha: sha('a'), head_sha: upToDate ? sha('a') : sha('b'), merge_base: sha('a'),
          is_up_to_date: upToDate, can_merge: true, can_fast_forward: !upToDate, conflicts: [],
        });
    };

    it('inside a sandbox: head, session and project come from the environment; prints #N and URL', async () => {
      const sid = '3f2e1d0c-b9a8-4765-8432-10fedcba9876';
      compared(sid);
      api()
        .post(CRS, { title: 'Add greeting', head_ref: sid, session_id: sid })
        .reply(201, { change_request: makeCR({ head_ref: sid, origin_session_id: sid }) });
      const r = await run(['cr', 'open', '--title', 'Add greeting'], {
        env: env({ SVC_BRANCH_NAME: sid, SVC_SESSION_ID: sid, SVC_DASHBOARD_URL: 'https://dash.test' }),
      });
      expect(r.code, r.stderr).to.equal(0);
      expect(r.stdout).to.equal(`#3\nhttps://dash.test/projects/${P}/change-requests/3\n`);
    });

    it('SVC_HEAD_REF is the fallback for the head', async () => {
      compared('from-head-ref');
      api().post(CRS, { title: 'T', head_ref: 'from-head-ref' }).reply(201, { change_request: makeCR() });
      const r = await run(['cr', 'new', '--title', 'T'], { env: env({ SVC_HEAD_REF: 'from-head-ref' }) });
      expect(r.code).to.equal(0);
    });

    it('flags beat the environment; aliases --from/--into/--body work', async () => {
      compared('feat', 'dev');
      api()
        .post(CRS, { title: 'T', description: 'D', head_ref: 'feat', base_ref: 'dev', session_id: 'sess-flag' })
        .reply(201, { change_request: makeCR() });
      const r = await run(['cr', 'create', '--title', 'T', '--body', 'D', '--from', 'feat', '--into', 'dev', '--session', 'sess-flag'], {
        env: env({ SVC_BRANCH_NAME: 'env-branch', SVC_SESSION_ID: 'env-session' }),
      });
      expect(r.code).to.equal(0);
    });

    it('outside a session: the current git branch is the head', async () => {
      await mkdir(path.join(sb.dir, '.git'), { recursive: true });
      await writeFile(path.join(sb.dir, '.git', 'HEAD'), 'ref: refs/heads/local-work\n');
      compared('local-work');
      api().post(CRS, { title: 'T', head_ref: 'local-work' }).reply(201, { change_request: makeCR() });
      expect((await run(['cr', 'open', '--title', 'T'])).code).to.equal(0);
    });

    it('no head at all: exit 1; no --title: exit 2', async () => {
      const r = await run(['cr', 'open', '--title', 'T']);
      expect(r.code).to.equal(1);
      expect(r.stderr).to.contain('error: no head branch');
      const u = await run(['cr', 'open', '--head', 'x']);
      expect(u.code).to.equal(2);
      expect(u.stderr).to.contain('error: Missing required argument: title');
    });

    it('a 400 from the API (head == base) is exit 1 with its message', async () => {
      compared('main', 'main', true);
      api().post(CRS).reply(400, { error: 'Validation failed', message: 'head_ref must differ from base_ref.', issues: [] });
      await failsWith(['cr', 'open', '--title', 'T', '--head', 'main'], 'error: head_ref must differ from base_ref. (HTTP 400)');
    });

    it('a head that adds nothing to its base: exit 1 with why and what to do, nothing opened', async () => {
      compared('done-already', 'main', true);
      const r = await run(['cr', 'open', '--title', 'T', '--head', 'done-already']);
      expect(r.code).to.equal(1);
      expect(r.stderr).to.contain("error: 'done-already' adds nothing to 'main': every commit on it is already there");
      expect(r.stderr).to.contain('--allow-empty');
      expect(r.stdout).to.equal('');
    });

    it('--allow-empty opens it without asking; a compare 404 (a branch not pushed) leaves the error to the open', async () => {
      api().post(CRS, { title: 'T', head_ref: 'done-already' }).reply(201, { change_request: makeCR() });
      expect((await run(['cr', 'open', '--title', 'T', '--head', 'done-already', '--allow-empty'])).code).to.equal(0);
      api().get(`/v1/projects/${P}/compare`).query({ head: 'unpushed' }).reply(404, { error: 'Not found', message: "Branch 'unpushed' not found." });
      api().post(CRS, { title: 'T', head_ref: 'unpushed' }).reply(400, { error: 'Validation failed', message: "head_ref 'unpushed' does not exist in the repository; push it first.", issues: [] });
      await failsWith(['cr', 'open', '--title', 'T', '--head', 'unpushed'], "error: head_ref 'unpushed' does not exist in the repository; push it first. (HTTP 400)");
    });
  });

  describe('merge, close, reopen', () => {
    it('merge posts the message and reports a fast-forward on stderr', async () => {
      const merged = makeCR({ status: 'merged', merge_commit_sha: 'a'.repeat(40) });
      api().post(`${CRS}/3/merge`, { message: 'Ship it' }).reply(200, { change_request: merged });
      const r = await run(['cr', 'merge', '3', '--message', 'Ship it']);
      expect(r.code).to.equal(0);
      expect(r.stdout).to.equal('');
      expect(r.stderr).to.contain('Merged change request #3 into main (fast-forward aaaaaaa)');
    });

    it('merge conflicts: exit 1, one error line naming the files', async () => {
      api().post(`${CRS}/3/merge`, {}).reply(409, { error: 'Merge failed', message: 'The merge has conflicts.', conflicts: ['a.txt', 'b.txt'] });
      const r = await run(['cr', 'merge', '3']);
      expect(r.code).to.equal(1);
      const lines = r.stderr.trim().split('\n');
      expect(lines[lines.length - 1]).to.match(/^error: merge failed: conflicts in a\.txt, b\.txt; /);
    });

    it('merging a closed CR (409): exit 1', async () => {
      api().post(`${CRS}/3/merge`).reply(409, { error: 'Conflict', message: 'Change request is not open.' });
      await failsWith(['cr', 'merge', '3'], 'error: Change request is not open. (HTTP 409)');
    });

    it('merge --stack posts {"stack": true}; --stack with --when-green is a usage error', async () => {
      const merged = makeCR({ status: 'merged', merge_commit_sha: 'a'.repeat(40) });
      api().post(`${CRS}/3/merge`, { stack: true }).reply(200, { change_request: merged });
      const r = await run(['cr', 'merge', '3', '--stack']);
      expect(r.code, r.stderr).to.equal(0);
      expect(r.stderr).to.contain('Merged the stack up to change request #3 into main (fast-forward aaaaaaa)');
      const both = await run(['cr', 'merge', '3', '--stack', '--when-green']);
      expect(both.code).to.equal(2);
    });

    it('stack: the chain bottom first, indented, the asked-for CR marked, a note under a CR that waits', async () => {
      const id = (n: number) => `7c0e1f2a-3b4c-4d5e-8f60-7182930000${String(n).padStart(2, '0')}`;
      const cr = (n: number, head: string, base: string, status = 'open') => makeCR({ cr_id: id(n), number: n, head_ref: head, base_ref: base, status, title: `step ${n}` });
      const body = {
        cr_id: id(5),
        stack: [
          { change_request: cr(4, 'one', 'main', 'closed'), parent_cr_id: null, child_cr_ids: [id(5)], note: null },
          { change_request: cr(5, 'two', 'one'), parent_cr_id: id(4), child_cr_ids: [id(6)], note: 'Its parent #4 was closed without merging: this change request waits for a person.' },
          { change_request: cr(6, 'three', 'two'), parent_cr_id: id(5), child_cr_ids: [], note: null },
        ],
      };
      api().get(`${CRS}/5/stack`).reply(200, body);
      const r = await run(['cr', 'stack', '5']);
      expect(r.code, r.stderr).to.equal(0);
      expect(r.stdout).to.equal([
        '  #4 closed\tone -> main\tstep 4',
        '*   #5 open\ttwo -> one\tstep 5',
        '      Its parent #4 was closed without merging: this change request waits for a person.',
        '      #6 open\tthree -> two\tstep 6',
        '',
      ].join('\n'));
      api().get(`${CRS}/5/stack`).reply(200, body);
      expect(JSON.parse((await run(['cr', 'stack', '5', '--json'])).stdout)).to.deep.equal(body);
    });

    it('close and reopen', async () => {
      api().post(`${CRS}/3/close`).reply(200, { change_request: makeCR({ status: 'closed' }) });
      api().post(`${CRS}/3/reopen`).reply(200, { change_request: makeCR() });
      const c = await run(['cr', 'close', '#3']);
      expect(c.stderr).to.contain('Closed change request #3');
      const o = await run(['cr', 'reopen', '3', '--json']);
      expect(JSON.parse(o.stdout)).to.deep.equal(makeCR());
    });

    it('401 with the token from SVC_CLI_TOKEN: exit 1 naming the variable (it overrides any login)', async () => {
      api().post(`${CRS}/3/close`).reply(401, { error: 'Unauthorized', message: 'A valid token is required: Authorization: Bearer svc_pat_...' });
      await failsWith(['cr', 'close', '3'], "error: A valid token is required: Authorization: Bearer svc_pat_... (HTTP 401); the token comes from SVC_CLI_TOKEN, which overrides any 'svc login'");
    });
  });

  it('--project and --host work before the command words', async () => {
    await mkdir(path.dirname(sb.configPath), { recursive: true });
    await writeFile(sb.configPath, JSON.stringify({ hosts: { h: { url: API, token: TOKEN } } }));
    api().get('/v1/projects/other/change-requests').query({ status: 'open' }).reply(200, { next_cursor: null, change_requests: [] });
    const r = await run(['--host', 'h', '--project', 'other', 'cr', 'ls'], { env: {} });
    expect(r.code).to.equal(0);
    expect(r.stderr).to.contain(`host: h (${API})`);
  });

  it('an unreachable host: exit 1, one line', async () => {
    const port = await closedPort();
    nock.enableNetConnect(`127.0.0.1:${port}`);
    const r = await run(['cr', 'ls'], { env: env({ SVC_API_URL: `http://127.0.0.1:${port}` }) });
    nock.disableNetConnect();
    expect(r.code).to.equal(1);
    expect(r.stderr).to.match(new RegExp(`error: cannot reach http://127\\.0\\.0\\.1:${port}/v1: ECONNREFUSED; is svc-server running at http://127\\.0\\.0\\.1:${port}\\? start it with 'svc-server start'.*\n$`));
  });
});
