import { expect } from 'chai';
import { client } from '../support/http.js';
import { fixtureRepo, type FixtureRepo } from '../support/repo.js';
import { startTestServer, type TestServer } from '../support/server.js';
import { fakeRuntime, killSandboxes, killSandboxesUnder } from '../support/sessions.js';
import { setPassword } from '../../services/dashboard/passwords.js';
import { csrfIn, dashFetch, PASSWORD, signInHttp, withPassword } from './support.js';

/**
 * The dashboard's page loaders and actions call services as the signed-in user, under the
 * API's access rules: a second account, signed in, asking for the first account's
 * project, change request or session gets the 404 the API gives (never the object, and
 * nothing changes). Each loader is checked against the owner's own 200 first, so a 404
 * here is the rule and not a broken page.
 */
describe('dashboard loaders: another account\'s objects are not found', function () {
  this.timeout(90_000);
  let srv: TestServer;
  let repo: FixtureRepo;
  let owner: string;
  let intruder: string;
  let csrf: string;
  let pid: string;
  let crId: string;
  let sessionId: string;
  let theirPid: string;
  let ownerApi: ReturnType<typeof client>;

  before(async () => {
    srv = await startTestServer({ env: { SVC_AGENT_RUNTIME: fakeRuntime, SVC_SCHEDULER: '0', SVC_APPS: '0' } });
    repo = await fixtureRepo();
    ownerApi = client(srv.url, srv.token);
    const created = await ownerApi.post('/v1/projects', { name: 'mine', slug: 'mine', repo_url: repo.url });
    expect(created.status).to.equal(201);
    pid = created.body.project.project_id;
    await repo.commit('topic', { 'a.txt': 'a\n' });
    const cr = await ownerApi.post('/v1/projects/mine/change-requests', { title: 'Owner CR', head_ref: 'topic' });
    expect(cr.status).to.equal(201);
    crId = cr.body.change_request.cr_id;
    expect((await ownerApi.call('PUT', '/v1/projects/mine/secrets/OWNER_KEY', { value: 'x' })).status).to.equal(204);
    const s = await ownerApi.post('/v1/projects/mine/sessions', {});
    expect(s.status).to.equal(201);
    sessionId = s.body.session.session_id;

    await withPassword(srv);
    owner = await signInHttp(srv.url);
    const other = await srv.newUser('intruder@example.test');
    await setPassword(srv.db.db, 'intruder@example.test', PASSWORD);
    intruder = await signInHttp(srv.url, 'intruder@example.test');
    const theirs = await client(srv.url, other.token).post('/v1/projects', { name: 'theirs', slug: 'theirs' });
    expect(theirs.status).to.equal(201);
    theirPid = theirs.body.project.project_id;
    csrf = csrfIn((await dashFetch(srv.url, intruder, '/projects')).text);
  });
  after(async () => {
    if (srv) await killSandboxes(srv.db);
    await srv?.stop();
    if (srv) await killSandboxesUnder(srv.dataDir);
    await repo?.cleanup();
  });

  const get = (cookie: string, path: string, accept?: string) => dashFetch(srv.url, cookie, path, accept ? { accept } : {});
  const post = (path: string, form: Record<string, string> = {}) => dashFetch(srv.url, intruder, path, { form: { _csrf: csrf, ...form } });
  /** The owner sees the page; the intruder gets the API's 404 for it. */
  async function ownerOnly(path: string, accept?: string) {
    expect((await get(owner, path, accept)).status, `owner: ${path}`).to.equal(200);
    const r = await get(intruder, path, accept);
    expect(r.status, `intruder: ${path}`).to.equal(404);
    expect(r.text).to.not.contain('Owner CR').and.not.contain('OWNER_KEY');
    return r;
  }
  const crStatus = async () => (await ownerApi.get(`/v1/projects/mine/change-requests/${crId}`)).body.change_request;

  it('the projects list: only the signed-in user\'s projects', async () => {
    const mine = await get(owner, '/projects');
    expect(mine.text).to.contain(`/projects/${pid}"`);
    const theirs = await get(intruder, '/projects');
    expect(theirs.status).to.equal(200);
    expect(theirs.text).to.contain(`/projects/${theirPid}"`).and.not.contain(pid);
  });

  it('the project page (its CR list), by id and by slug', async () => {
    await ownerOnly(`/projects/${pid}`);
    await ownerOnly('/projects/mine');
    await ownerOnly(`/projects/${pid}?status=all`);
  });

  it('the CR page (diff, merge preview, history) and its "as of" view; the CR under the intruder\'s own project', async () => {
    await ownerOnly(`/projects/${pid}/change-requests/1`);
    await ownerOnly(`/projects/${pid}/change-requests/${crId}`);
    await ownerOnly(`/projects/${pid}/change-requests/1?${new URLSearchParams({ as_of: new Date().toISOString() })}`);
    expect((await get(intruder, `/projects/${theirPid}/change-requests/${crId}`)).status).to.equal(404);
  });

  it('the CR page\'s actions: edit, merge, close, reopen change nothing', async () => {
    const before = await crStatus();
    const base = `/projects/${pid}/change-requests/1`;
    expect((await post(`${base}/edit`, { title: 'pwned' })).status).to.equal(404);
    expect((await post(`${base}/merge`, { expected_head_sha: before.head_commit_sha })).status).to.equal(404);
    expect((await post(`${base}/close`)).status).to.equal(404);
    expect((await post(`${base}/reopen`)).status).to.equal(404);
    expect((await post(`/projects/${theirPid}/change-requests/${crId}/close`)).status).to.equal(404);
    const after = await crStatus();
    expect(after.title).to.equal('Owner CR');
    expect(after.status).to.equal('open');
    expect(after.updated_at).to.equal(before.updated_at);
  });

  it('the sessions list', async () => {
    const r = await ownerOnly(`/projects/${pid}/sessions`);
    expect(r.text).to.not.contain(sessionId);
  });

  it('the session page; the session under the intruder\'s own project', async () => {
    await ownerOnly(`/projects/${pid}/sessions/${sessionId}`);
    const r = await get(intruder, `/projects/${theirPid}/sessions/${sessionId}`);
    expect(r.status).to.equal(404);
    expect(r.text).to.not.contain(sessionId);
  });

  it('the session actions: new, stop, restart, refresh, remove, prompt', async () => {
    const before = (await ownerApi.get(`/v1/projects/mine/sessions/${sessionId}`)).body.session;
    const base = `/projects/${pid}/sessions/${sessionId}`;
    expect((await post(`/projects/${pid}/sessions`, { text: 'hello' })).status).to.equal(404);
    for (const a of ['stop', 'restart', 'refresh', 'remove']) expect((await post(`${base}/${a}`)).status, a).to.equal(404);
    expect((await post(`${base}/prompt`, { text: 'hello' })).status).to.equal(404);
    expect((await post(`/projects/${theirPid}/sessions/${sessionId}/stop`)).status).to.equal(404);
    const list = (await ownerApi.get('/v1/projects/mine/sessions')).body.sessions as Array<{ session_id: string }>;
    expect(list.map((s) => s.session_id)).to.deep.equal([sessionId]);
    const after = (await ownerApi.get(`/v1/projects/mine/sessions/${sessionId}`)).body.session;
    expect(after.created_at).to.equal(before.created_at);
    expect(after.status).to.not.equal('stopped');
  });

  it('the secrets page and its set / unset forms', async () => {
    await ownerOnly(`/projects/${pid}/secrets`);
    expect((await post(`/projects/${pid}/secrets`, { name: 'PLANTED', value: 'x' })).status).to.equal(404);
    expect((await post(`/projects/${pid}/secrets/OWNER_KEY/unset`)).status).to.equal(404);
    const names = (await ownerApi.get('/v1/projects/mine/secrets')).body.secrets.map((s: { name: string }) => s.name);
    expect(names).to.deep.equal(['OWNER_KEY']);
  });

  it('the triggers page and Fire / Enable / Disable', async () => {
    await ownerOnly(`/projects/${pid}/triggers`);
    for (const verb of ['fire', 'enable', 'disable']) expect((await post(`/projects/${pid}/triggers/nightly/${verb}`)).status, verb).to.equal(404);
    expect((await ownerApi.get('/v1/projects/mine/change-requests?status=all')).body.change_requests).to.have.length(1);
  });

  it('the apps page', async () => {
    await ownerOnly(`/projects/${pid}/apps`);
  });

  it('the live feed', async () => {
    const r = await get(intruder, `/projects/${pid}/live`, 'application/json');
    expect(r.status).to.equal(404);
    expect(JSON.parse(r.text)).to.include({ error: 'Not found' });
  });

  it('the tokens page lists only the user\'s tokens; revoking another user\'s token is a 404 and it keeps working', async () => {
    const ownerTokens = (await ownerApi.get('/v1/accounts/tokens')).body.tokens as Array<{ token_id: string }>;
    expect(ownerTokens.length).to.be.greaterThan(0);
    const page = await get(intruder, '/tokens');
    expect(page.status).to.equal(200);
    for (const t of ownerTokens) {
      expect(page.text).to.not.contain(t.token_id.slice(0, 8));
      expect((await post(`/tokens/${t.token_id}/revoke`)).status).to.equal(404);
    }
    expect((await ownerApi.get('/v1/accounts/tokens')).body.tokens).to.have.length(ownerTokens.length);
    expect((await get(owner, '/projects')).status).to.equal(200); // the owner's sign-in token too
  });
});
