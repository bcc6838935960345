import { expect } from 'chai';
import nock from 'nock';
import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { useNock } from './nock-scope.js';
import { PROJECT, makeCR, runSvc, sandbox, type Sandbox } from './helpers.js';

const API = 'http://api.secrets.test:8080';
const TOKEN = 'svc_pat_secrets';
const P = PROJECT.project_id;
const SECRET = 'sk-THE-VALUE-4242';
const LISTING = {
  secrets: [{ name: 'DB_URL', updated_at: '2026-01-01T11:00:00.000Z' }],
  env: { required: [{ name: 'OPENAI_API_KEY', description: 'model key' }, { name: 'DB_URL', description: '' }], optional: [{ name: 'SENTRY_DSN', description: 'errors' }], missing: ['OPENAI_API_KEY'] },
  revision: 4,
};

describe('svc secrets / env / triggers / apps (HTTP stubbed with nock)', () => {
  let sb: Sandbox;
  const env = { SVC_API_URL: `${API}/v1`, SVC_CLI_TOKEN: TOKEN, SVC_PROJECT_ID: P };
  const api = () => nock(API, { reqheaders: { authorization: `Bearer ${TOKEN}` } });
  const run = (args: string[], o: { stdin?: string; tty?: boolean } = {}) =>
    runSvc(args, { configPath: sb.configPath, env, cwd: sb.dir, ...(o.stdin !== undefined ? { stdin: o.stdin } : {}), ...(o.tty !== undefined ? { tty: o.tty } : {}) });

  useNock();
  beforeEach(async () => (sb = await sandbox()));
  afterEach(() => sb.cleanup());

  it('secrets ls: names with the [env] spec, required-but-missing marked', async () => {
    api().get(`/v1/projects/${P}/secrets`).reply(200, LISTING);
    const r = await run(['secrets', 'ls']);
    expect(r.code).to.equal(0);
    expect(r.stdout).to.equal('DB_URL\tset\trequired\t2026-01-01T11:00:00.000Z\t\nOPENAI_API_KEY\tmissing\trequired\t\tmodel key\nSENTRY_DSN\tnot set\toptional\t\terrors\n');
  });

  it('secrets set: NAME=- reads stdin; one batch; the value is never echoed', async () => {
    let body: unknown;
    api().patch(`/v1/projects/${P}/secrets`, (b) => ((body = b), true)).reply(200, { ...LISTING, revision: 5 });
    const r = await run(['secrets', 'set', 'OPENAI_API_KEY=-', `OTHER=${SECRET}x`], { stdin: `${SECRET}\n` });
    expect(r.code, r.stderr).to.equal(0);
    expect(body).to.deep.equal({ set: { OPENAI_API_KEY: SECRET, OTHER: `${SECRET}x` } });
    expect(r.stdout + r.stderr).to.not.contain(SECRET);
    expect(r.stderr).to.contain('Set 2 secrets: OPENAI_API_KEY, OTHER (revision 5)');
  });

  it('secrets set refuses SVC_ names and malformed pairs before any request (exit 2)', async () => {
    for (const args of [['SVC_TOKEN=x'], ['lower=x'], ['NOEQUALS'], ['A=-', 'B=-']]) {
      const r = await run(['secrets', 'set', ...args], { stdin: 'v' });
      expect(r.code, args.join(' ')).to.equal(2);
      expect(r.stderr).to.not.contain('v\n');
    }
  });

  it('secrets set names a malformed argument back only when it is a lone name (never what may be a value)', async () => {
    const cases: [string, string][] = [
      ['=abc', `error: expected NAME=VALUE, got an argument with nothing before '=' (the value is not shown)\n`],
      ['NOEQUALS', 'error: expected NAME=VALUE, got "NOEQUALS" without a value (use NOEQUALS=- to read it from stdin)\n'],
      ['sk-live-1234', `error: expected NAME=VALUE, got an argument without '=' (not shown: it may be a value; use NAME=- to read a value from stdin)\n`],
    ];
    for (const [typed, line] of cases) {
      const r = await run(['secrets', 'set', typed]);
      expect(r.code, typed).to.equal(2);
      expect(r.stderr).to.equal(line);
      if (typed !== 'NOEQUALS') expect(r.stderr).to.not.contain(typed.replace(/^=/, ''));
    }
  });

  it('secrets unset sends one batch', async () => {
    api().patch(`/v1/projects/${P}/secrets`, { unset: ['A', 'B'] }).reply(200, LISTING);
    const r = await run(['secrets', 'unset', 'A', 'B']);
    expect(r.code).to.equal(0);
  });

  it('env pull writes names only, and never overwrites without --force', async () => {
    api().get(`/v1/projects/${P}/secrets`).times(2).reply(200, LISTING);
    const first = await run(['env', 'pull']);
    expect(first.code, first.stderr).to.equal(0);
    const text = await readFile(path.join(sb.dir, '.env'), 'utf8');
    expect(text).to.contain('# required: model key\nOPENAI_API_KEY=\n').and.contain('DB_URL=\n').and.contain('# errors\nSENTRY_DSN=\n');
    await writeFile(path.join(sb.dir, '.env'), 'MINE=1\n');
    const again = await run(['env', 'pull']);
    expect(again.code).to.equal(1);
    expect(again.stderr).to.contain('.env already exists');
    expect(await readFile(path.join(sb.dir, '.env'), 'utf8')).to.equal('MINE=1\n');
    expect((await run(['env', 'pull', '--force', '--out', '.env'])).code).to.equal(0);
    expect(await readFile(path.join(sb.dir, '.env'), 'utf8')).to.equal(text);
  });

  it('env push uploads every value in one batch; a line it cannot parse uploads nothing and names the line', async () => {
    await writeFile(path.join(sb.dir, 'good.env'), `# keys\nexport OPENAI_API_KEY="${SECRET}"\nDB_URL='postgres://x'\nBLANK=\n`);
    api().patch(`/v1/projects/${P}/secrets`, { set: { OPENAI_API_KEY: SECRET, DB_URL: 'postgres://x' } }).reply(200, LISTING);
    const ok = await run(['env', 'push', '--from', 'good.env']);
    expect(ok.code, ok.stderr).to.equal(0);
    expect(ok.stderr).to.contain('Uploaded 2 secrets').and.contain('skipped blank: BLANK').and.not.contain(SECRET);

    await writeFile(path.join(sb.dir, 'bad.env'), `A=${SECRET}\nthis is not a line\n`);
    const bad = await run(['env', 'push', '--from', 'bad.env']); // no stub: any request would fail the test
    expect(bad.code).to.equal(1);
    expect(bad.stderr).to.contain('bad.env: line 2: expected NAME=value; nothing was uploaded').and.not.contain(SECRET);
  });

  it('triggers ls / enable print last_fired_at and the CR opened', async () => {
    api().get(`/v1/projects/${P}/triggers`).reply(200, { triggers: [{ slug: 'nightly', schedule: '0 3 * * *', prompt: 'p', agent: null, model: null, enabled: true, last_fired_at: '2026-01-01T03:00:00.000Z', next_fire_at: '2026-01-02T03:00:00.000Z' }] });
    const ls = await run(['triggers', 'ls']);
    expect(ls.stdout).to.equal('nightly\t0 3 * * *\ttrue\t2026-01-01T03:00:00.000Z\t2026-01-02T03:00:00.000Z\n');
    api().post(`/v1/projects/${P}/triggers/nightly/disable`, {}).reply(201, { change_request: makeCR({ number: 9, title: 'Disable trigger nightly' }) });
    const dis = await run(['triggers', 'disable', 'nightly']);
    expect(dis.code).to.equal(0);
    expect(dis.stderr).to.contain('Opened change request #9 to disable nightly');
    expect(dis.stdout).to.match(/\/change-requests\/9\n$/);
  });

  it('triggers fire reports "sessions unavailable" as an error (exit 1)', async () => {
    api().post(`/v1/projects/${P}/triggers/nightly/fire`, {}).reply(503, { error: 'Sessions unavailable', message: 'This server has no sessions capability to spawn a session with.', outcome: 'sessions unavailable' });
    const r = await run(['triggers', 'fire', 'nightly']);
    expect(r.code).to.equal(1);
    expect(r.stderr).to.contain('no sessions capability');
  });

  it('apps ls / info', async () => {
    const app = { name: 'web', status: 'live', commit_sha: 'c'.repeat(40), url: 'http://web-0123abcd4567.localhost:8080/', public: false, manifest_hash: 'h'.repeat(64), deployed_at: '2026-01-01T11:00:00.000Z', last_error: null };
    api().get(`/v1/projects/${P}/apps`).reply(200, { apps: [app] });
    expect((await run(['apps', 'ls'])).stdout).to.equal(`web\tlive\tccccccc\thttp://web-0123abcd4567.localhost:8080/\t2026-01-01T11:00:00.000Z\n`);
    api().get(`/v1/projects/${P}/apps/web`).reply(200, { app: { ...app, deploys: [{ deploy_id: '00000000-0000-4000-8000-0000000000d1', commit_sha: 'c'.repeat(40), manifest_hash: app.manifest_hash, status: 'live', url: app.url, error: null, started_at: '2026-01-01T10:59:00.000Z', finished_at: '2026-01-01T10:59:05.000Z' }] } });
    const info = await run(['apps', 'info', 'web']);
    expect(info.stdout).to.contain('url:\thttp://web-0123abcd4567.localhost:8080/\n').and.contain('recent deploys:\n  2026-01-01T10:59:00.000Z\tccccccc\tlive\n');
  });
});
