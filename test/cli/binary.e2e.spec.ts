/**
 * The built binary as a real process: exit codes, stdout/stderr separation, the config
 * file on disk, and the environment-only mode of a sandbox. The API is a small fake HTTP
 * server on 127.0.0.1.
 */
import { expect } from 'chai';
import http from 'node:http';
import { readFile, stat } from 'node:fs/promises';
import path from 'node:path';
import { ME, PROJECT, makeCR, sandbox, spawnSvc, type Sandbox } from './helpers.js';

const TOKEN = 'svc_pat_binarytest';

interface Fake {
  url: string;
  requests: Array<{ method: string; url: string; auth?: string; body: string }>;
  close(): Promise<void>;
}

async function fakeApi(): Promise<Fake> {
  const requests: Fake['requests'] = [];
  const P = `/v1/projects/${PROJECT.project_id}`;
  const server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c: Buffer) => (body += c));
    req.on('end', () => {
      requests.push({ method: req.method!, url: req.url!, ...(req.headers.authorization ? { auth: req.headers.authorization } : {}), body });
      const send = (status: number, obj: unknown) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify(obj));
      };
      if (req.headers.authorization !== `Bearer ${TOKEN}`) return send(401, { error: 'Unauthorized', message: 'Unauthorized' });
      const u = new URL(req.url!, 'http://x');
      if (req.method === 'GET' && u.pathname === '/v1/accounts/me') return send(200, ME);
      if (req.method === 'GET' && u.pathname === `${P}/change-requests`) return send(200, { change_requests: [makeCR()] });
      if (req.method === 'POST' && u.pathname === `${P}/change-requests`) return send(201, { change_request: makeCR(JSON.parse(body)) });
      if (req.method === 'GET' && u.pathname === `${P}/compare`) {
        const [a, b] = ['a'.repeat(40), 'b'.repeat(40)];
        return send(200, { base_ref: 'main', head_ref: u.searchParams.get('head'), base_sha: a, head_sha: b, merge_base: a, is_up_to_date: false, can_merge: true, can_fast_forward: true, conflicts: [] });
      }
      if (req.method === 'GET' && u.pathname === `${P}/change-requests/3/diff`)
        return send(200, { base_sha: 'b', head_sha: 'a', merge_base: 'b', files: [], additions: 1, deletions: 1, patch: '@@ -1 +1 @@\n-old\n+new\n' });
      if (req.method === 'POST' && u.pathname === `${P}/change-requests/3/merge`)
        return send(409, { error: 'Merge failed', message: 'The merge has conflicts.', conflicts: ['README.md'] });
      return send(404, { error: 'Not found', message: 'Not found.' });
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
  const port = (server.address() as { port: number }).port;
  return { url: `http://127.0.0.1:${port}`, requests, close: () => new Promise((r) => server.close(() => r())) };
}

describe('svc binary (spawned)', function () {
  this.timeout(30_000);
  let sb: Sandbox;
  let api: Fake;
  before(async () => (api = await fakeApi()));
  after(() => api.close());
  beforeEach(async () => (sb = await sandbox()));
  afterEach(() => sb.cleanup());
  const baseEnv = () => ({ HOME: sb.home, SVC_CONFIG_FILE: sb.configPath });

  it('version and --version: exit 0, stdout only', async () => {
    for (const args of [['version'], ['--version']]) {
      const r = await spawnSvc(args, { env: baseEnv() });
      expect(r).to.deep.include({ code: 0, stderr: '' });
      expect(r.stdout).to.match(/^svc version \d+\.\d+\.\d+\n$/);
    }
  });

  it('help and no arguments: the tree on stdout, exit 0', async () => {
    for (const args of [['help'], [], ['--help']]) {
      const r = await spawnSvc(args, { env: baseEnv() });
      expect(r.code).to.equal(0);
      expect(r.stdout).to.contain('cr merge <cr>').and.contain('hosts use [<name>]');
      expect(r.stderr).to.equal('');
    }
  });

  it('usage errors exit 2 with one stderr line and empty stdout', async () => {
    // One unknown word is `svc <project-name>` (scaffolds a directory): two words, or a typo of a command, are usage errors.
    for (const args of [['frobnicate', 'now'], ['shpi'], ['cr', 'frobnicate'], ['cr', 'ls', '--bogus'], ['cr', 'show'], ['cr', 'open'], ['hosts', 'add', 'x'], ['cr', 'ls', '--status'], ['--bogus'], ['--bogus=1', '--help']]) {
      const r = await spawnSvc(args, { env: baseEnv() });
      expect(r.code, args.join(' ')).to.equal(2);
      expect(r.stdout, args.join(' ')).to.equal('');
      expect(r.stderr, args.join(' ')).to.match(/^error: [^\n]+\n$/);
    }
  });

  it('a group without a subcommand: its help on stderr, exit 2', async () => {
    const r = await spawnSvc(['cr'], { env: baseEnv() });
    expect(r.code).to.equal(2);
    expect(r.stdout).to.equal('');
    expect(r.stderr).to.contain('COMMANDS').and.contain('error: missing subcommand for "svc cr"');
  });

  it('login --token stores the token in a 0600 config file; whoami then works', async () => {
    const add = await spawnSvc(['hosts', 'add', 'fake', '--url', `${api.url}/v1`], { env: baseEnv() });
    expect(add.code).to.equal(0);
    const login = await spawnSvc(['login', '--host', 'fake', '--token', TOKEN], { env: baseEnv() });
    expect(login.code, login.stderr).to.equal(0);
    expect(login.stdout).to.equal('');
    expect((await stat(sb.configPath)).mode & 0o777).to.equal(0o600);
    expect(JSON.parse(await readFile(sb.configPath, 'utf8')).hosts.fake.token).to.equal(TOKEN);
    const who = await spawnSvc(['whoami'], { env: baseEnv() });
    expect(who.code).to.equal(0);
    expect(who.stdout).to.contain('Ada <ada@example.com>');
  });

  it('the default config path is ~/.config/svc/config.json', async () => {
    const r = await spawnSvc(['login', '--api', api.url, '--token', '-'], { env: { HOME: sb.home }, input: TOKEN + '\n' });
    expect(r.code, r.stderr).to.equal(0);
    expect((await stat(path.join(sb.home, '.config', 'svc', 'config.json'))).mode & 0o777).to.equal(0o600);
  });

  it('in a sandbox: SVC_API_URL + SVC_CLI_TOKEN, no config file; cr open picks up the branch and session; SVC_TOKEN is never sent', async () => {
    const sid = '3f2e1d0c-b9a8-4765-8432-10fedcba9876';
    const env = {
      HOME: sb.home,
      SVC_CONFIG_FILE: path.join(sb.dir, 'absent', 'config.json'),
      SVC_API_URL: `${api.url}/v1`,
      SVC_CLI_TOKEN: TOKEN,
      SVC_TOKEN: 'svc_service_key_never_sent',
      SVC_PROJECT_ID: PROJECT.project_id,
      SVC_BRANCH_NAME: sid,
      SVC_SESSION_ID: sid,
    };
    const before = api.requests.length;
    const r = await spawnSvc(['cr', 'open', '--title', 'From the sandbox'], { env });
    expect(r.code, r.stderr).to.equal(0);
    expect(r.stdout).to.match(new RegExp(`^#3\\nhttp://127\\.0\\.0\\.1:\\d+/projects/${PROJECT.project_id}/change-requests/3\\n$`));
    expect(r.stderr).to.contain(`host: SVC_API_URL (${api.url})`);
    const sent = api.requests.slice(before);
    // First the compare (a head adding nothing is refused), then the open.
    expect(sent.map((s) => `${s.method} ${s.url}`)).to.deep.equal([
      `GET /v1/projects/${PROJECT.project_id}/compare?head=${sid}`,
      `POST /v1/projects/${PROJECT.project_id}/change-requests`,
    ]);
    for (const s of sent) expect(s.auth).to.equal(`Bearer ${TOKEN}`);
    expect(JSON.parse(sent[1]!.body)).to.deep.equal({ title: 'From the sandbox', head_ref: sid, session_id: sid });
    const ls = await spawnSvc(['cr', 'ls', '--json'], { env });
    expect(ls.code).to.equal(0);
    expect(ls.stderr).to.equal('');
    expect(JSON.parse(ls.stdout)).to.have.length(1);
  });

  it('SVC_EXECUTOR_TOKEN works when SVC_CLI_TOKEN is unset', async () => {
    const r = await spawnSvc(['whoami', '--json'], { env: { HOME: sb.home, SVC_API_URL: api.url, SVC_EXECUTOR_TOKEN: TOKEN } });
    expect(r.code).to.equal(0);
    expect(JSON.parse(r.stdout)).to.deep.equal(ME);
  });

  it('operation failures exit 1 with one stderr line: no project, API 401, merge conflict, unreachable host', async () => {
    const env = { HOME: sb.home, SVC_API_URL: api.url, SVC_CLI_TOKEN: TOKEN };
    const noProject = await spawnSvc(['cr', 'ls'], { env, cwd: sb.dir });
    expect(noProject.code).to.equal(1);
    expect(noProject.stderr).to.match(/error: no project.*svc projects link/);

    const unauthorized = await spawnSvc(['whoami'], { env: { ...env, SVC_CLI_TOKEN: 'svc_pat_wrong' } });
    expect(unauthorized.code).to.equal(1);
    expect(unauthorized.stderr).to.match(/^error: Unauthorized \(HTTP 401\); the token comes from SVC_CLI_TOKEN, which overrides any 'svc login': .*\n$/);

    const conflict = await spawnSvc(['cr', 'merge', '3', '--project', PROJECT.project_id], { env });
    expect(conflict.code).to.equal(1);
    expect(conflict.stdout).to.equal('');
    expect(conflict.stderr).to.match(/error: merge failed: conflicts in README\.md; /);

    const down = await spawnSvc(['whoami'], { env: { ...env, SVC_API_URL: 'http://127.0.0.1:1' } });
    expect(down.code).to.equal(1);
    expect(down.stderr).to.match(/^error: cannot reach http:\/\/127\.0\.0\.1:1\/v1: ECONNREFUSED; is svc-server running at http:\/\/127\.0\.0\.1:1\? start it with 'svc-server start'.*\n$/);
  });

  it('piped output has no color unless CLICOLOR_FORCE; NO_COLOR wins', async () => {
    const env = { HOME: sb.home, SVC_API_URL: api.url, SVC_CLI_TOKEN: TOKEN, SVC_PROJECT_ID: PROJECT.project_id };
    const plain = await spawnSvc(['cr', 'diff', '3'], { env });
    expect(plain.stdout).to.equal('@@ -1 +1 @@\n-old\n+new\n');
    const forced = await spawnSvc(['cr', 'diff', '3'], { env: { ...env, CLICOLOR_FORCE: '1' } });
    expect(forced.stdout).to.contain('\x1b[32m+new\x1b[39m');
    const off = await spawnSvc(['cr', 'diff', '3', '--no-color'], { env: { ...env, CLICOLOR_FORCE: '1' } });
    expect(off.stdout).to.equal(plain.stdout);
    const noColor = await spawnSvc(['cr', 'diff', '3'], { env: { ...env, CLICOLOR_FORCE: '1', NO_COLOR: '1' } });
    expect(noColor.stdout).to.equal(plain.stdout);
  });
});
