import { expect } from 'chai';
import { randomBytes } from 'node:crypto';
import { client } from '../support/http.js';
import { fixtureRepo, type FixtureRepo } from '../support/repo.js';
import { startTestServer, type TestProject, type TestServer } from '../support/server.js';
import { eventually, mergeChange } from '../int/manifest/support.js';
import { PASSWORD, withPassword } from './support.js';

const MANIFEST = `[env]
required = ["API_KEY", "DB_URL"]
optional = { SENTRY_DSN = "error reporting" }

[[triggers]]
slug = "nightly"
schedule = "0 3 * * *"
prompt = "Clean up <b>now</b>"
enabled = true

[[apps]]
name = "web"
command = "node server.js"
port = 3000
`;

/** The secrets, triggers and apps pages over plain HTTP: forms with CSRF, values never echoed. */
describe('dashboard secrets, triggers and apps pages (HTTP)', function () {
  this.timeout(60_000);
  let srv: TestServer;
  let repo: FixtureRepo;
  let p: TestProject;
  let pid: string;
  let cookie: string;
  /** Every response body and header the dashboard sent in this spec, to look for the value in. */
  const seen: string[] = [];
  const SECRET = `v4lue-${randomBytes(12).toString('hex')}`;

  const dash = async (path: string, init: { method?: string; form?: Record<string, string>; headers?: Record<string, string> } = {}) => {
    const r = await fetch(`${srv.url}${path}`, {
      method: init.method ?? (init.form ? 'POST' : 'GET'),
      redirect: 'manual',
      headers: {
        cookie, accept: 'text/html',
        ...(init.form ? { 'content-type': 'application/x-www-form-urlencoded', origin: srv.url } : {}),
        ...init.headers,
      },
      ...(init.form ? { body: new URLSearchParams(init.form) } : {}),
    });
    const text = await r.text();
    seen.push(text, JSON.stringify([...r.headers]));
    return { status: r.status, text, location: r.headers.get('location') };
  };
  const csrfOf = (pageText: string) => /name="_csrf" value="([^"]+)"/.exec(pageText)![1]!;

  before(async () => {
    srv = await startTestServer({ env: { SVC_SCHEDULER: '0', SVC_APPS: '0' } });
    repo = await fixtureRepo();
    const api = client(srv.url, srv.token);
    const created = await api.post('/v1/projects', { name: 'Config <i>demo</i>', slug: 'cfg', repo_url: repo.url });
    expect(created.status).to.equal(201);
    pid = created.body.project.project_id;
    p = { srv, repo, api, base: '/v1/projects/cfg/change-requests' };
    const sha = await mergeChange(p, 'manifest', { 'svc.toml': MANIFEST });
    await eventually(async () => (await api.get('/v1/projects/cfg/manifest')).body.source_sha === sha, 'the manifest sync');
    await eventually(async () => (await api.get('/v1/projects/cfg/apps')).body.apps?.length === 1, 'the app row');

    await withPassword(srv);
    const login = await fetch(`${srv.url}/login`);
    const pre = /svc_pre=([^;]+)/.exec(login.headers.get('set-cookie') ?? '')![1]!;
    const signedIn = await fetch(`${srv.url}/login`, {
      method: 'POST', redirect: 'manual',
      headers: { cookie: `__Host-svc_pre=${pre}`, 'content-type': 'application/x-www-form-urlencoded', origin: srv.url },
      body: new URLSearchParams({ _csrf: csrfOf(await login.text()), email: 'owner@example.test', password: PASSWORD }),
    });
    expect(signedIn.status).to.equal(303);
    cookie = `__Host-svc_session=${/svc_session=([^;]+)/.exec(signedIn.headers.get('set-cookie') ?? '')![1]!}`;
  });
  after(async () => {
    await srv?.stop();
    await repo?.cleanup();
  });

  it('the project page links its secrets, triggers and apps', async () => {
    const r = await dash(`/projects/${pid}`);
    expect(r.status).to.equal(200);
    for (const s of ['secrets', 'triggers', 'apps']) expect(r.text).to.contain(`href="/projects/${pid}/${s}"`);
    expect(r.text).to.contain('Config &lt;i&gt;demo&lt;/i&gt;');
  });

  it('sets a secret through the form: the name is listed, the value is in no response; a required one not set is marked', async () => {
    const before = await dash(`/projects/${pid}/secrets`);
    expect(before.status).to.equal(200);
    expect(before.text).to.contain('type="password" name="value"');
    for (const n of ['API_KEY', 'DB_URL']) expect(before.text).to.match(new RegExp(`data-env="${n}">[^]*?data-status="missing"`));

    const set = await dash(`/projects/${pid}/secrets`, { form: { _csrf: csrfOf(before.text), name: 'API_KEY', value: SECRET } });
    expect(set.status).to.equal(303);
    expect(set.location).to.equal(`/projects/${pid}/secrets?notice=secret_set`);

    const after = await dash(set.location!);
    expect(after.text).to.contain('Secret saved.');
    expect(after.text).to.contain('data-secret="API_KEY"');
    const row = (n: string) => new RegExp(`<tr data-env="${n}">.*?</tr>`, 's').exec(after.text)![0];
    expect(row('API_KEY')).to.contain('>set<').and.not.contain('missing');
    expect(row('DB_URL')).to.contain('data-status="missing"');
    expect(row('SENTRY_DSN')).to.contain('not set').and.not.contain('missing');
    expect(after.text).to.contain('data-missing="DB_URL"');
    // The value field renders empty, always.
    expect(after.text).to.match(/<input type="password" name="value" maxlength="65536" autocomplete="new-password" spellcheck="false">/);

    // A refused name: the page comes back with the API's reason and the name, not the value.
    const bad = await dash(`/projects/${pid}/secrets`, { form: { _csrf: csrfOf(before.text), name: 'SVC_TOKEN', value: SECRET } });
    expect(bad.status).to.equal(400);
    expect(bad.text).to.contain('value="SVC_TOKEN"').and.contain('class="notice error"');

    // The API has it (names only).
    const listing = (await p.api.get('/v1/projects/cfg/secrets')).body;
    expect(listing.secrets.map((s: { name: string }) => s.name)).to.deep.equal(['API_KEY']);
    expect(listing.env.missing).to.deep.equal(['DB_URL']);
    for (const text of seen) expect(text).to.not.contain(SECRET);
  });

  it('refuses a secret post without the CSRF token, or from another site', async () => {
    const page = await dash(`/projects/${pid}/secrets`);
    const forged = await dash(`/projects/${pid}/secrets`, { form: { name: 'FORGED', value: 'x' }, headers: { origin: 'http://evil.example' } });
    expect(forged.status).to.equal(403);
    const crossWithToken = await dash(`/projects/${pid}/secrets`, { form: { _csrf: csrfOf(page.text), name: 'FORGED', value: 'x' }, headers: { origin: 'http://evil.example' } });
    expect(crossWithToken.status).to.equal(403);
    const noToken = await dash(`/projects/${pid}/secrets`, { form: { name: 'FORGED', value: 'x' } });
    expect(noToken.status).to.equal(403);
    const unset = await dash(`/projects/${pid}/secrets/API_KEY/unset`, { form: {} });
    expect(unset.status).to.equal(403);
    const names = (await p.api.get('/v1/projects/cfg/secrets')).body.secrets.map((s: { name: string }) => s.name);
    expect(names).to.deep.equal(['API_KEY']);
  });

  it('unsets a secret through its button', async () => {
    const page = await dash(`/projects/${pid}/secrets`);
    const r = await dash(`/projects/${pid}/secrets/API_KEY/unset`, { form: { _csrf: csrfOf(page.text) } });
    expect(r.status).to.equal(303);
    const after = await dash(r.location!);
    expect(after.text).to.contain('Secret removed.').and.not.contain('data-secret="API_KEY"');
    expect(after.text).to.contain('data-missing="API_KEY,DB_URL"');
    for (const text of seen) expect(text).to.not.contain(SECRET);
  });

  it('lists triggers; Disable opens a CR whose link is on the result page, and flips nothing', async () => {
    const list = await dash(`/projects/${pid}/triggers`);
    expect(list.status).to.equal(200);
    const row = /<tr data-trigger="nightly">.*?<\/tr>/s.exec(list.text)![0];
    expect(row).to.contain('<code>0 3 * * *</code>').and.contain('data-enabled="true"').and.contain('never');
    expect(row).to.contain('Clean up &lt;b&gt;now&lt;/b&gt;').and.match(/<time datetime="[^"]+T\d\d:00:00\.000Z"/);
    expect(row).to.contain(`action="/projects/${pid}/triggers/nightly/fire"`).and.contain(`action="/projects/${pid}/triggers/nightly/disable"`);

    const forged = await dash(`/projects/${pid}/triggers/nightly/disable`, { form: {} });
    expect(forged.status).to.equal(403);

    const r = await dash(`/projects/${pid}/triggers/nightly/disable`, { form: { _csrf: csrfOf(list.text) } });
    expect(r.status).to.equal(200);
    const crs = (await p.api.get('/v1/projects/cfg/change-requests?status=open')).body.change_requests;
    const cr = crs.find((c: { title: string }) => c.title === 'Disable trigger nightly');
    expect(cr, JSON.stringify(crs)).to.exist;
    expect(r.text).to.contain(`href="/projects/${pid}/change-requests/${cr.number}"`).and.contain('Opened change request');
    // Still enabled until the CR merges.
    expect(r.text).to.match(/<tr data-trigger="nightly">.*?data-enabled="true"/s);
    // An unknown trigger: the API's 404, shown on the page.
    const missing = await dash(`/projects/${pid}/triggers/nope/disable`, { form: { _csrf: csrfOf(list.text) } });
    expect(missing.status).to.equal(404);
    expect(missing.text).to.contain('class="notice error"');
  });

  it('Fire shows the spawned session\'s link', async () => {
    const list = await dash(`/projects/${pid}/triggers`);
    const r = await dash(`/projects/${pid}/triggers/nightly/fire`, { form: { _csrf: csrfOf(list.text) } });
    const fire = (await p.api.get('/v1/projects/cfg/triggers/nightly')).body.trigger.fires[0];
    expect(fire, r.text).to.include({ kind: 'manual', outcome: 'spawned' });
    expect(r.status).to.equal(200);
    expect(r.text).to.contain(`href="/projects/${pid}/sessions/${fire.session_id}"`).and.contain('Fired <strong>nightly</strong>');
    await p.api.call('DELETE', `/v1/projects/cfg/sessions/${fire.session_id}`);
  });

  it('lists apps with status, commit, last error and recent deploys', async () => {
    await eventually(async () => (await p.api.get('/v1/projects/cfg/apps/web')).body.app?.status === 'failed', 'the refused deploy');
    const r = await dash(`/projects/${pid}/apps`);
    expect(r.status).to.equal(200);
    const app = /<section class="app" data-app="web">.*?<\/section>/s.exec(r.text)![0];
    expect(app).to.contain('data-status="failed"').and.contain('Last error').and.contain('Recent deploys (1)');
    expect(app).to.contain('apps are disabled on this server (SVC_APPS=0)');
    // Never deployed: no commit of its own; the deploy names the commit it tried.
    expect(app).to.contain('<dt>Commit</dt><dd>–</dd>');
    expect(app).to.match(/<tr data-deploy="[^"]+">.*?<code title="[0-9a-f]{40}">[0-9a-f]{7}<\/code>.*?data-status="failed"/s);
  });

  it('pages of another account\'s project are not found', async () => {
    const other = await srv.newUser('other@example.test');
    const theirs = await client(srv.url, other.token).post('/v1/projects', { name: 'theirs', slug: 'theirs' });
    expect(theirs.status).to.equal(201);
    for (const s of ['secrets', 'triggers', 'apps']) expect((await dash(`/projects/${theirs.body.project.project_id}/${s}`)).status).to.equal(404);
  });
});
