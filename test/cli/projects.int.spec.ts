import { expect } from 'chai';
import nock from 'nock';
import { offContractStub, useNock } from './nock-scope.js';
import { mkdir, readFile } from 'node:fs/promises';
import path from 'node:path';
import { writeConfig } from '../../cli/config.js';
import { findLink } from '../../cli/link.js';
import { PROJECT, runSvc, sandbox, scriptedPrompter, type Sandbox } from './helpers.js';

const API = 'http://api.projects.test:7070';
const TOKEN = 'svc_pat_projtest';
const OTHER = { ...PROJECT, project_id: '1c2d3e4f-5a6b-4c7d-8e9f-a0b1c2d3e4f5', name: 'Other', slug: 'other' };

describe('svc projects (HTTP stubbed with nock)', () => {
  let sb: Sandbox;
  useNock();
  beforeEach(async () => {
    sb = await sandbox();
    await writeConfig(sb.configPath, { active_host: 'dev', hosts: { dev: { url: API, token: TOKEN } } });
  });
  afterEach(() => sb.cleanup());
  const api = () => nock(API, { reqheaders: { authorization: `Bearer ${TOKEN}` } });
  const run = (args: string[], o: { tty?: boolean; env?: Record<string, string>; cwd?: string; answers?: Array<number | boolean> } = {}) =>
    runSvc(args, {
      configPath: sb.configPath,
      env: o.env ?? {},
      cwd: o.cwd ?? sb.dir,
      prompter: scriptedPrompter(o.answers ?? []).prompter,
      ...(o.tty !== undefined ? { tty: o.tty } : {}),
    });

  it('ls: piped rows, --json the API objects, and the host line on stderr only without --json', async () => {
    api().get('/v1/projects').twice().reply(200, { next_cursor: null, projects: [PROJECT, OTHER] });
    const r = await run(['projects', 'ls']);
    expect(r.stdout.split('\n')[0]).to.equal(`demo\tDemo\tmain\t${PROJECT.project_id}\t${PROJECT.created_at}`);
    expect(r.stderr).to.equal(`host: dev (${API})\n`);
    const j = await run(['projects', 'ls', '--json']);
    expect(JSON.parse(j.stdout)).to.deep.equal([PROJECT, OTHER]);
    expect(j.stderr).to.equal('');
  });

  it('link <id> writes .svc/link.json; info and cr commands then use it from a subdirectory; unlink removes it', async () => {
    api().get('/v1/projects/demo').reply(200, { project: PROJECT });
    const l = await run(['projects', 'link', 'demo']);
    expect(l.code).to.equal(0);
    const link = JSON.parse(await readFile(path.join(sb.dir, '.svc', 'link.json'), 'utf8'));
    expect(link).to.deep.equal({ project_id: PROJECT.project_id, account_id: PROJECT.account_id, host: 'dev', host_url: API });

    const sub = path.join(sb.dir, 'pkg', 'src');
    await mkdir(sub, { recursive: true });
    api().get(`/v1/projects/${PROJECT.project_id}`).reply(200, { project: PROJECT });
    const info = await run(['projects', 'info'], { cwd: sub });
    expect(info.code).to.equal(0);
    expect(info.stdout).to.contain('slug:\tdemo\n').and.contain('default branch:\tmain\n');

    const u = await run(['projects', 'unlink'], { cwd: sub });
    expect(u.code).to.equal(0);
    expect(await findLink(sub)).to.equal(undefined);
    const again = await run(['projects', 'unlink'], { cwd: sub });
    expect(again.code).to.equal(1);
  });

  it('link without an argument: picker on a TTY, usage error (2) when piped', async () => {
    api().get('/v1/projects').reply(200, { next_cursor: null, projects: [PROJECT, OTHER] });
    const r = await run(['projects', 'link'], { tty: true, answers: [1] });
    expect(r.code).to.equal(0);
    expect((await findLink(sb.dir))?.link.project_id).to.equal(OTHER.project_id);
    const p = await run(['projects', 'link']);
    expect(p.code).to.equal(2);
  });

  it('info <slug> --json prints the project', async () => {
    api().get('/v1/projects/other').reply(200, { project: OTHER });
    expect(JSON.parse((await run(['projects', 'info', 'other', '--json'])).stdout)).to.deep.equal(OTHER);
  });

  it('info with nothing linked: exit 1 naming svc projects link', async () => {
    const r = await run(['projects', 'info']);
    expect(r.code).to.equal(1);
    expect(r.stderr).to.contain("svc projects link");
  });

  it('open prints the dashboard URL off a TTY and opens the browser on one (not under CI)', async () => {
    api().get('/v1/projects/demo').times(3).reply(200, { project: PROJECT });
    const env = { SVC_DASHBOARD_URL: 'https://dash.test' };
    const piped = await run(['projects', 'open', 'demo'], { env });
    expect(piped.stdout).to.equal(`https://dash.test/projects/${PROJECT.project_id}\n`);
    expect(piped.opened).to.deep.equal([]);
    const tty = await run(['projects', 'open', 'demo'], { env, tty: true });
    expect(tty.opened).to.deep.equal([`https://dash.test/projects/${PROJECT.project_id}`]);
    expect(tty.stdout).to.equal('');
    const ci = await run(['projects', 'open', 'demo'], { env: { ...env, CI: '1' }, tty: true });
    expect(ci.opened).to.deep.equal([]);
    expect(ci.stdout).to.contain('https://dash.test/projects/');
  });

  it('create: POST /v1/projects with only the given fields; the repo URL on stdout, --json the project; a 400 is exit 1 with its message', async () => {
    const created = { ...PROJECT, name: 'Gadget', slug: 'gadget', repo_url: 'https://git.example.com/ada/gadget.git', default_branch: 'trunk' };
    api()
      .post('/v1/projects', (b) => JSON.stringify(b) === JSON.stringify({ name: 'Gadget', repo_url: 'https://git.example.com/ada/gadget.git', default_branch: 'trunk' }))
      .reply(201, { project: created });
    const r = await run(['projects', 'create', 'Gadget', '--repo-url', 'https://git.example.com/ada/gadget.git', '--default-branch', 'trunk']);
    expect(r.code, r.stderr).to.equal(0);
    expect(r.stdout).to.equal('https://git.example.com/ada/gadget.git\n');
    expect(r.stderr).to.contain(`Created project gadget (${PROJECT.project_id})`);
    api().post('/v1/projects', (b) => JSON.stringify(b) === JSON.stringify({ name: 'Managed' })).reply(201, { project: { ...PROJECT, name: 'Managed', slug: 'managed', repo_url: `${API}/git/${PROJECT.project_id}.git` } });
    const j = await run(['projects', 'create', 'Managed', '--json']);
    expect(j.code, j.stderr).to.equal(0);
    expect(JSON.parse(j.stdout).slug).to.equal('managed');
    api().post('/v1/projects').reply(400, { error: 'BadRequest', message: 'repo_url: file:// repositories are disabled' });
    const bad = await run(['projects', 'create', 'X', '--repo-url', 'file:///srv/x.git']);
    expect(bad.code).to.equal(1);
    expect(bad.stderr).to.contain('file:// repositories are disabled');
    const none = await run(['projects', 'create']);
    expect(none.code).to.equal(2);
  });

  it('a 403 (project token on another project) is exit 1', async () => {
    api().get('/v1/projects/other').reply(403, { error: 'Forbidden', message: 'Token is scoped to another project.' });
    const r = await run(['projects', 'info', 'other']);
    expect(r.code).to.equal(1);
    expect(r.stderr).to.contain('error: Token is scoped to another project. (HTTP 403)');
  });

  it('a response without the expected envelope is exit 1, not a crash', async () => {
    offContractStub(() => api().get('/v1/projects').reply(200, { items: [] }));
    const r = await run(['projects', 'ls']);
    expect(r.code).to.equal(1);
    expect(r.stderr).to.contain('response has no "projects"');
  });
});
