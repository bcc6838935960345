import { expect } from 'chai';
import WebSocket from 'ws';
import { client } from '../../support/http.js';
import { authedUrl, workDir, type WorkDir } from '../../support/git-client.js';
import { startTestServer, type TestServer } from '../../support/server.js';
import { agentReady, fakeRuntime, killSandboxes, killSandboxesUnder, waitForStatus } from '../../support/sessions.js';
import { runSvc, sandbox } from '../../cli/helpers.js';
import { dashFetch, signInHttp, withPassword } from '../../dashboard/support.js';
import { AGENT_BRANCH_MESSAGE, CR_ONLY_MESSAGE } from '../../../infra/git/pre-receive.js';
import { AGENT_CANNOT_MERGE_MESSAGE } from '../../../services/tokens/agent-policy.js';

/**
 * The credential matrix: everything obtainable inside a sandbox —
 * SVC_CLI_TOKEN (= SVC_EXECUTOR_TOKEN), SVC_TOKEN, and what clone-credential returns —
 * cannot merge, write secrets, create sessions, or push anything but its own session
 * branch; a person's `/cli-token` token still merges. Commit statuses (`POST .../statuses/:sha`)
 * and merge when green (`POST .../merge {"when":"checks_pass"}`) are people's too.
 *
 * A managed project, so that pushes go through the server's smart HTTP and its pre-receive
 * hook; two sessions on the process provider (scripted runtime): A is the agent under
 * test, B the other session whose branch A must not move.
 */
describe('sessions: agent-grade credentials (the credential matrix)', function () {
  this.timeout(120_000);
  let srv: TestServer;
  let w: WorkDir;
  let projectId: string;
  let repoUrl: string;
  /**
   * Sandbox A's gateway as A reaches it: agent credentials are accepted only there (on the
   * public listener they are 401). A process sandbox's forwarder listens on a host loopback
   * port (its SVC_API_URL origin), so the test uses A's credentials where A does.
   */
  let agentBase: string;
  let agentRepoUrl: string;
  const P = '/v1/projects/matrix';
  let a: { id: string; cli: string; svc: string; clone: string };
  let b: string;

  before(async () => {
    // The sandbox's own request rate cap set past the matrix's burst: this spec attacks credentials, gateway-limits.int the caps.
    srv = await startTestServer({ env: { SVC_AGENT_RUNTIME: fakeRuntime, SVC_SANDBOX_MAX_REQUEST_RATE: '500', SVC_SANDBOX_MAX_REQUESTS: '64' } });
    const api = client(srv.url, srv.token);
    const created = await api.post('/v1/projects', { name: 'matrix', slug: 'matrix' });
    expect(created.status, JSON.stringify(created.body)).to.equal(201);
    projectId = created.body.project.project_id;
    repoUrl = created.body.project.repo_url;
    // A person's first push creates main.
    w = await workDir();
    await w.ok(['init', '-q', '-b', 'main']);
    await w.commit({ 'README.md': 'hello\n' }, 'first');
    await w.ok(['push', '-q', authedUrl(repoUrl, srv.token), 'main']);

    const sa = (await api.post(`${P}/sessions`, {})).body.session;
    const sb = (await api.post(`${P}/sessions`, {})).body.session;
    await waitForStatus(api, `${P}/sessions/${sa.session_id}`, ['running']);
    await waitForStatus(api, `${P}/sessions/${sb.session_id}`, ['running']);
    const env = (await agentReady(api, `${P}/sessions/${sa.session_id}/agent/fake/state`)).body.env as Record<string, string>;
    agentBase = new URL(env.SVC_API_URL!).origin;
    expect(agentBase).to.not.equal(new URL(srv.url).origin);
    agentRepoUrl = `${agentBase}/git/${projectId}.git`;
    expect((await client(srv.url, env.SVC_TOKEN!).get(`/v1/projects/${projectId}/git/clone-credential`)).status, 'SVC_TOKEN on the public listener').to.equal(401);
    const cred = await client(agentBase, env.SVC_TOKEN!).get(`/v1/projects/${projectId}/git/clone-credential`);
    expect(cred.status, JSON.stringify(cred.body)).to.equal(200);
    expect(cred.body.repo_url).to.equal(`${srv.url}/git/${projectId}.git`);
    a = { id: sa.session_id, cli: env.SVC_CLI_TOKEN!, svc: env.SVC_TOKEN!, clone: cred.body.password };
    b = sb.session_id;
    expect(env.SVC_EXECUTOR_TOKEN).to.equal(a.cli);
  });

  after(async () => {
    await w?.cleanup();
    if (srv) await killSandboxes(srv.db);
    await srv?.stop();
    if (srv) await killSandboxesUnder(srv.dataDir);
  });

  /** Pushes HEAD to `ref` with `token`; the git result. */
  const push = (token: string, ref: string, extra: string[] = []) => w.run(['push', ...extra, authedUrl(token === srv.token ? repoUrl : agentRepoUrl, token), `HEAD:${ref}`]);
  const tip = async (ref: string) => (await w.ok(['ls-remote', authedUrl(repoUrl, srv.token), `refs/heads/${ref}`])).split('\t')[0];

  it('the tokens are agent-grade rows naming their sandbox; a person\'s are not', async () => {
    const rows = await srv.db.db.rows<{ name: string; grade: string; sandbox_id: string | null }>({
      text: 'SELECT name, grade, sandbox_id FROM tokens ORDER BY created_at',
      values: [],
    });
    const byName = (n: string) => rows.filter((r) => r.name === n);
    expect(byName(`session ${a.id}`).map((r) => r.grade)).to.deep.equal(['agent']);
    expect(byName(`session ${a.id}`)[0]!.sandbox_id).to.be.a('string');
    expect(byName('clone-credential').every((r) => r.grade === 'agent' && r.sandbox_id)).to.equal(true);
    expect(rows.filter((r) => r.sandbox_id === null).every((r) => r.grade === 'person')).to.equal(true);
  });

  it('what an agent may do: read, push its own branch, open and edit its session\'s CR', async () => {
    for (const token of [a.cli, a.clone]) {
      expect((await client(srv.url, token).get(`${P}/change-requests`)).status, 'public listener').to.equal(401);
      expect((await client(agentBase, token).get(`${P}/change-requests`)).status).to.equal(200);
      expect((await client(agentBase, token).get(`${P}/sessions/${a.id}`)).status).to.equal(200);
    }
    await w.ok(['checkout', '-q', '-b', 'agent-work', 'main']);
    await w.commit({ 'agent.txt': '1\n' }, 'agent one');
    const p1 = await push(a.clone, a.id);
    expect(p1.code, p1.stderr).to.equal(0);
    await w.commit({ 'agent.txt': '2\n' }, 'agent two');
    const p2 = await push(a.cli, a.id);
    expect(p2.code, p2.stderr).to.equal(0);
    expect(await tip(a.id)).to.equal(await w.ok(['rev-parse', 'HEAD']));

    const agent = client(agentBase, a.cli);
    const opened = await agent.post(`${P}/change-requests`, { title: 'agent work', head_ref: a.id });
    expect(opened.status, JSON.stringify(opened.body)).to.equal(201);
    // The agent's own session is recorded as the CR's origin, whatever it sent.
    expect(opened.body.change_request.origin_session_id).to.equal(a.id);
    const n = opened.body.change_request.number;
    expect((await agent.call('PATCH', `${P}/change-requests/${n}`, { title: 'agent work, edited' })).status).to.equal(200);
    expect((await agent.post(`${P}/change-requests/${n}/close`, {})).status).to.equal(200);
    expect((await agent.post(`${P}/change-requests/${n}/reopen`, {})).status).to.equal(200);
  });

  it('the matrix: merge, secret write, session create, another session\'s branch, main — each refused', async () => {
    // A's own CR (open), and a CR a person opened from B's branch.
    const own = (await client(srv.url, srv.token).get(`${P}/change-requests?status=open`)).body.change_requests.find((c: any) => c.head_ref === a.id);
    expect(own, 'the agent CR from the test before').to.not.equal(undefined);
    await w.ok(['checkout', '-q', '-b', 'b-work', 'main']);
    await w.commit({ 'b.txt': 'b\n' }, 'person on B');
    expect((await push(srv.token, b)).code).to.equal(0);
    const theirs = await client(srv.url, srv.token).post(`${P}/change-requests`, { title: 'B', head_ref: b, session_id: b });
    expect(theirs.status, JSON.stringify(theirs.body)).to.equal(201);
    const mainBefore = await tip('main');
    const bBefore = await tip(b);
    await w.ok(['checkout', '-q', 'agent-work']);
    await w.ok(['merge', '-q', '--no-edit', 'b-work']); // a fast-forward of B's branch from the agent's side

    for (const [name, token] of [['SVC_CLI_TOKEN', a.cli], ['SVC_TOKEN', a.svc], ['clone credential', a.clone]] as const) {
      const c = client(agentBase, token);
      const isKey = name === 'SVC_TOKEN'; // not a PAT: 401 everywhere but clone-credential
      for (const cr of [own.number, theirs.body.change_request.number]) {
        const merge = await c.post(`${P}/change-requests/${cr}/merge`, {});
        if (isKey) expect(merge.status, `${name} merge`).to.equal(401);
        else {
          expect(merge.status, `${name} merge`).to.equal(403);
          expect(merge.body).to.deep.equal({ error: 'Forbidden', code: 'agent_cannot_merge', message: AGENT_CANNOT_MERGE_MESSAGE });
        }
        const green = await c.post(`${P}/change-requests/${cr}/merge`, { when: 'checks_pass' });
        expect(green.status, `${name} merge when green`).to.equal(isKey ? 401 : 403);
        if (!isKey) expect(green.body.code).to.equal('agent_cannot_merge');
      }
      const refusals: [string, string, unknown?][] = [
        ['PUT', `${P}/secrets/API_KEY`, { value: 'x' }],
        ['PATCH', `${P}/secrets`, { set: { A: 'b' } }],
        ['DELETE', `${P}/secrets/API_KEY`],
        ['POST', `${P}/sessions`, {}],
        ['POST', `${P}/sessions/${b}/stop`, {}],
        ['POST', `${P}/sessions/${b}/prompt`, { text: 'x' }],
        ['POST', `${P}/sessions/${b}/refresh`, {}],
        ['DELETE', `${P}/sessions/${b}`],
        ['POST', `${P}/cli-token`],
        ['POST', `${P}/statuses/${own.head_commit_sha}`, { context: 'ci/e2e', state: 'success' }],
        ['DELETE', `${P}/change-requests/${own.number}/checks/00000000-0000-4000-8000-000000000000/log`],
        ['DELETE', P],
        ['POST', `${P}/channels`, { kind: 'webhook', url: 'https://example.test/hook' }],
        ['POST', `${P}/triggers/nightly/fire`, {}],
        ['POST', '/v1/projects', { name: 'x' }],
        ['POST', '/v1/accounts/tokens', { name: 'x' }],
        ['GET', `${P}/sessions/${b}/agent/fake/state`],
        ['PATCH', `${P}/change-requests/${theirs.body.change_request.number}`, { title: 'hijacked' }],
        ['POST', `${P}/change-requests/${theirs.body.change_request.number}/close`, {}],
        ['POST', `${P}/change-requests`, { title: 'from B', head_ref: b }],
        ['POST', `${P}/change-requests`, { title: 'from main', head_ref: 'main', base_ref: a.id }],
        ['POST', `${P}/change-requests`, { title: 'as B', head_ref: a.id, session_id: b }],
      ];
      for (const [method, path, body] of refusals) {
        const r = await c.call(method, path, body);
        expect(r.status, `${name}: ${method} ${path} -> ${JSON.stringify(r.body)}`).to.equal(isKey ? 401 : 403);
        expect(r.body.error, `${name}: ${method} ${path}`).to.be.a('string');
        if (!isKey) expect(r.body.code, `${name}: ${method} ${path}`).to.match(/^agent_/);
      }
      // Pushes: another session's branch (a fast-forward), main, a tag. Nothing moves.
      const toB = await push(token, b);
      expect(toB.code, `${name} -> B`).to.not.equal(0);
      if (!isKey) expect(toB.stderr).to.contain(AGENT_BRANCH_MESSAGE);
      const toMain = await push(token, 'main');
      expect(toMain.code, `${name} -> main`).to.not.equal(0);
      if (!isKey) expect(toMain.stderr).to.contain(CR_ONLY_MESSAGE);
      expect((await w.run(['push', authedUrl(agentRepoUrl, token), 'HEAD:refs/tags/agent-tag'])).code, `${name} tag`).to.not.equal(0);
    }
    expect(await tip('main')).to.equal(mainBefore);
    expect(await tip(b)).to.equal(bBefore);
    expect((await client(srv.url, srv.token).get(`${P}/change-requests/${theirs.body.change_request.number}`)).body.change_request).to.include({ status: 'open', title: 'B' });
    expect(JSON.stringify((await client(srv.url, srv.token).get(`${P}/secrets`)).body)).to.not.match(/API_KEY|"A"/);
    expect((await client(srv.url, srv.token).get(`${P}/sessions?status=all`)).body.sessions).to.have.length(2);
  });

  it('the session proxy\'s WebSocket refuses agent tokens too (its own session and another)', async () => {
    for (const id of [a.id, b]) {
      for (const token of [a.cli, a.clone]) {
        const status = await new Promise<number>((resolve) => {
          const ws = new WebSocket(`${agentBase.replace('http', 'ws')}${P}/sessions/${id}/agent/socket?access_token=${token}`);
          ws.on('unexpected-response', (_req, r) => resolve(r.statusCode ?? 0));
          ws.on('open', () => {
            ws.close();
            resolve(101);
          });
          ws.on('error', () => resolve(-1));
        });
        expect(status, `session ${id === a.id ? 'A' : 'B'}`).to.equal(403);
      }
    }
  });

  it('`svc cr merge` with the sandbox\'s token exits 1 with the message on one stderr line', async () => {
    const own = (await client(srv.url, srv.token).get(`${P}/change-requests?status=open`)).body.change_requests.find((c: any) => c.head_ref === a.id);
    const sb = await sandbox();
    try {
      const r = await runSvc(['cr', 'merge', String(own.number)], {
        configPath: sb.configPath,
        cwd: sb.dir,
        env: { SVC_API_URL: `${agentBase}/v1`, SVC_CLI_TOKEN: a.cli, SVC_PROJECT_ID: 'matrix', SVC_SESSION_ID: a.id },
      });
      expect(r.code).to.equal(1);
      // One error line (the CLI's `host:` notice aside), the server's message whole.
      expect(r.stderr.trim().split('\n').filter((l) => !l.startsWith('host: '))).to.deep.equal([`error: ${AGENT_CANNOT_MERGE_MESSAGE} (HTTP 403)`]);
    } finally {
      await sb.cleanup();
    }
  });

  it('a person\'s /cli-token token still merges the agent\'s CR', async () => {
    const minted = await client(srv.url, srv.token).post(`${P}/cli-token`);
    expect(minted.status).to.equal(201);
    const own = (await client(srv.url, srv.token).get(`${P}/change-requests?status=open`)).body.change_requests.find((c: any) => c.head_ref === a.id);
    // It reports commit statuses too (a person's CI).
    const status = await client(srv.url, minted.body.token).post(`${P}/statuses/${own.head_commit_sha}`, { context: 'ci/e2e', state: 'success' });
    expect(status.status, JSON.stringify(status.body)).to.equal(201);
    const merged = await client(srv.url, minted.body.token).post(`${P}/change-requests/${own.number}/merge`, {});
    expect(merged.status, JSON.stringify(merged.body)).to.equal(200);
    expect(merged.body.change_request.status).to.equal('merged');
    expect(await tip('main')).to.equal(merged.body.change_request.merge_commit_sha);
  });

  it('the CR\'s history names the person and, for what their agent did, its session (API and page)', async () => {
    const own = (await client(srv.url, srv.token).get(`${P}/change-requests?status=all`)).body.change_requests.find((c: any) => c.head_ref === a.id);
    const events = (await client(srv.url, srv.token).get(`${P}/change-requests/${own.number}/events`)).body.events as any[];
    const by = (type: string) => events.filter((e) => e.type === type).map((e) => ({ actor_name: e.actor_name, session_id: e.session_id }));
    // The agent opened, edited, closed and reopened it for Owner; Owner's own token merged it.
    for (const t of ['ChangeRequestOpened', 'ChangeRequestEdited', 'ChangeRequestClosed', 'ChangeRequestReopened']) {
      expect(by(t), t).to.deep.equal([{ actor_name: 'Owner', session_id: a.id }]);
    }
    expect(by('ChangeRequestMerged')).to.deep.equal([{ actor_name: 'Owner', session_id: null }]);

    await withPassword(srv);
    const cookie = await signInHttp(srv.url);
    const page = await dashFetch(srv.url, cookie, `/projects/${projectId}/change-requests/${own.number}`);
    expect(page.status).to.equal(200);
    const items = [...page.text.matchAll(/<span class="ev">([a-z ]+)<\/span>[\s\S]*?<span class="muted">by ([\s\S]*?) · /g)].map((m) => [m[1], m[2]!.replace(/<[^>]+>/g, '')]);
    expect(items).to.deep.include(['opened', `the agent in session ${a.id.slice(0, 8)}, for Owner`]);
    expect(items).to.deep.include(['merged', 'Owner']);
    expect(page.text).to.include(`href="/projects/${projectId}/sessions/${a.id}"`);
  });

  it('refs/svc/* takes no push, not even a person\'s', async () => {
    const r = await w.run(['push', authedUrl(repoUrl, srv.token), 'HEAD:refs/svc/sessions/x/wip']);
    expect(r.code).to.not.equal(0);
    expect(r.stderr).to.contain('refs/svc/ belongs to the server');
  });
});
