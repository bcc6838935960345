import { expect } from 'chai';
import { readdir, readFile } from 'node:fs/promises';
import { client, gatewayUrl } from '../../support/http.js';
import { agentReady, pidAlive, waitForStatus, withSessionProject } from '../../support/sessions.js';
import { rebuildProjections } from '../../../projections/rebuild.js';
import { until } from '../../support/wait.js';

/** Processes whose environment names this session (its sandbox's entrypoint, daemon, runtime). */
async function processesOf(sessionId: string): Promise<number> {
  let n = 0;
  for (const pid of await readdir('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    const env = await readFile(`/proc/${pid}/environ`, 'utf8').catch(() => '');
    if (env.includes(`SVC_SESSION_ID=${sessionId}\0`)) n++;
  }
  return n;
}

describe('sessions: lifecycle on the process provider (scripted runtime)', function () {
  this.timeout(90_000);

  it('create → running → stop → restart → remove, with credentials revoked at every step', () =>
    withSessionProject({ slug: 'life' }, async ({ srv, repo, api, sessions }) => {
      const created = await api.post(sessions, { prompt: 'hello there', model: 'test-model' });
      expect(created.status).to.equal(201);
      const s = created.body.session;
      expect(s.status).to.equal('provisioning');
      expect(s.branch).to.equal(s.session_id);
      expect(s.base_ref).to.equal('main');
      expect(s.agent).to.equal('build');
      expect(s.model).to.equal('test-model');

      const one = `${sessions}/${s.session_id}`;
      const running = await waitForStatus(api, one, ['running', 'failed']);
      expect(running.status, JSON.stringify(running.error)).to.equal('running');
      expect(running.sandbox.state).to.equal('active');
      expect(running.sandbox.provider).to.equal('process');
      expect(running.sandbox.url).to.equal(`/v1/projects/${s.project_id}/sessions/${s.session_id}/agent/`);
      // The branch was cut at the base tip.
      expect(repo.tip(s.session_id)).to.equal(repo.tip('main'));

      const row = await srv.db.db.one<{ url: string; ref: string }>({ text: 'SELECT url, ref FROM session_sandboxes WHERE session_id = $1', values: [s.session_id] });
      const health = (await (await fetch(`${row!.url}/svc/health`)).json()) as any;
      expect(health.branch).to.equal(s.session_id);
      expect(health.commit).to.equal(repo.tip('main'));

      // The injected environment, as the runtime sees it, through the server's proxy.
      // The runtime boots after `running` (the daemon answers 503 until then).
      const state = await agentReady(api, `${one}/agent/fake/state`);
      const env = state.body.env as Record<string, string>;
      expect(env.SVC_SESSION_ID).to.equal(s.session_id);
      expect(env.SVC_BRANCH_NAME).to.equal(s.session_id);
      expect(env.SVC_PROJECT_ID).to.equal(s.project_id);
      expect(env.SVC_API_URL).to.match(/^http:\/\/127\.0\.0\.1:\d+\/v1$/);
      // The dashboard as the person opens it (this server's listener: no SVC_PUBLIC_URL here), for the links `svc cr open` prints.
      expect(env.SVC_DASHBOARD_URL).to.equal(`http://localhost:${new URL(srv.url).port}`);
      expect(env.SVC_INITIAL_PROMPT).to.equal('hello there');
      expect(env.SVC_BOOTSTRAP_AGENT_SESSION).to.equal('1');
      expect(env.SVC_PROJECT_AUTO_CLONE).to.equal('1');
      expect(env.SVC_CLI_TOKEN).to.match(/^svc_pat_/);
      expect(env.SVC_EXECUTOR_TOKEN).to.equal(env.SVC_CLI_TOKEN);
      expect(env.SVC_PROJECT_SECRET_NAMES).to.equal('');
      expect(env.SVC_PROJECT_SECRETS_REVISION).to.equal('0');
      // The model through the server's gateway, with this sandbox's own key; never the upstream's.
      expect(env.SVC_AGENT_MODEL).to.equal('svc/test-model');
      expect(env.SVC_LLM_BASE_URL).to.equal(`${env.SVC_API_URL}/llm`);
      expect(env.SVC_LLM_API_KEY).to.match(/^svc_llm_/);
      expect(env.SVC_YOLO_API_KEY).to.equal(env.SVC_LLM_API_KEY);
      expect(env.SVC_YOLO_URL).to.equal(env.SVC_LLM_BASE_URL);
      expect(JSON.stringify(env)).to.not.include('test-upstream-key-never-in-a-sandbox');
      const runtimeConfig = JSON.parse(env.OPENCODE_CONFIG_CONTENT!);
      // The runtime's provider is the daemon's model relay with the relay's own key; the relay adds the sandbox's.
      expect(runtimeConfig.provider.svc.options.baseURL).to.match(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect(runtimeConfig.provider.svc.options.apiKey).to.match(/^relay-/);
      expect(env.OPENCODE_CONFIG_CONTENT).to.not.include(env.SVC_LLM_API_KEY);
      expect(runtimeConfig.model).to.equal('svc/test-model');
      // The agent's git identity: the user's name, an address of this server's host.
      expect(env.GIT_AUTHOR_NAME).to.equal('Owner (svc agent)');
      expect(env.GIT_COMMITTER_NAME).to.equal('Owner (svc agent)');
      expect(env.GIT_AUTHOR_EMAIL).to.equal(`agent+${s.session_id}@127.0.0.1`);
      expect(env.GIT_COMMITTER_EMAIL).to.equal(env.GIT_AUTHOR_EMAIL);
      expect(JSON.stringify(env)).to.not.include('owner@example.test');
      expect(env).to.not.have.property('DATABASE_URL');
      expect(env).to.not.have.property('SVC_SECRET_KEY');
      const svcToken = env.SVC_TOKEN!;
      const cliToken = env.SVC_CLI_TOKEN!;
      // The proxy signed a context for the caller; the caller's PAT did not pass through.
      const echo = await api.get(`${one}/agent/fake/echo`);
      expect(echo.body.headers['x-svc-user-context']).to.equal(undefined); // the daemon strips it before the runtime
      expect(echo.body.headers.authorization).to.equal(undefined);

      // The project token works on its project; SVC_TOKEN only on the clone-credential route;
      // both only through the sandbox's own gateway, never on the public listener.
      const gw = gatewayUrl(srv.dataDir, running.sandbox.sandbox_id);
      expect((await client(gw, cliToken).get(`/v1/projects/${s.project_id}/change-requests`)).status).to.equal(200);
      expect((await client(srv.url, cliToken).get(`/v1/projects/${s.project_id}/change-requests`)).status).to.equal(401);
      expect((await client(gw, svcToken).get(`/v1/projects/${s.project_id}/change-requests`)).status).to.equal(401);
      expect((await client(srv.url, svcToken).get(`/v1/projects/${s.project_id}/git/clone-credential`)).status).to.equal(401);
      const cred = await client(gw, svcToken).get(`/v1/projects/${s.project_id}/git/clone-credential`);
      expect(cred.status).to.equal(200);
      expect(cred.body.username).to.equal('x-access-token');
      expect(cred.body.password).to.match(/^svc_pat_/);
      // A file:// project too is cloned through the server's smart HTTP, the URL the sandbox was given.
      expect(cred.body.repo_url).to.match(new RegExp(`/git/${s.project_id}\\.git$`));
      expect(Date.parse(cred.body.expires_at) - Date.now()).to.be.within(60_000, 16 * 60_000);
      expect((await client(srv.url, srv.token).get(`/v1/projects/${s.project_id}/git/clone-credential`)).status).to.equal(401);
      const clonePassword = cred.body.password as string;
      expect((await client(gw, clonePassword).get(`/v1/projects/${s.project_id}`)).status).to.equal(200);
      expect((await client(srv.url, clonePassword).get(`/v1/projects/${s.project_id}`)).status).to.equal(401);
      // A person's token is not taken through a sandbox's gateway either.
      expect((await client(gw, srv.token).get(`/v1/projects/${s.project_id}`)).status).to.equal(401);

      // Stop: tokens die at once, the clone credential minted for the sandbox included; the sandbox goes.
      const stopped = await api.post(`${one}/stop`, {});
      expect(stopped.status).to.equal(200);
      expect(stopped.body.session.status).to.equal('stopped');
      expect((await client(srv.url, cliToken).get(`/v1/projects/${s.project_id}/change-requests`)).status).to.equal(401);
      expect((await client(srv.url, svcToken).get(`/v1/projects/${s.project_id}/git/clone-credential`)).status).to.equal(401);
      expect((await client(srv.url, clonePassword).get(`/v1/projects/${s.project_id}`)).status, 'clone credential after stop').to.equal(401);
      const pid = Number(row!.ref);
      await until(() => !pidAlive(pid), 'the sandbox process to exit', { timeoutMs: 10_000, maxIntervalMs: 50 }).catch(() => undefined);
      expect(pidAlive(pid), 'sandbox process gone').to.equal(false);
      expect((await api.get(`${one}/agent/fake/state`)).status).to.equal(409);
      expect((await api.post(`${one}/prompt`, { text: 'x' })).status).to.equal(409);

      // Restart: a new sandbox with new credentials; the first prompt is not replayed.
      const restarted = await api.post(`${one}/restart`, {});
      expect(restarted.status).to.equal(200);
      expect(restarted.body.session.status).to.equal('provisioning');
      const again = await waitForStatus(api, one, ['running', 'failed']);
      expect(again.status).to.equal('running');
      expect(again.sandbox.sandbox_id).to.not.equal(running.sandbox.sandbox_id);
      const env2 = (await agentReady(api, `${one}/agent/fake/state`)).body.env as Record<string, string>;
      expect(env2.SVC_TOKEN).to.not.equal(svcToken);
      expect(env2.SVC_CLI_TOKEN).to.not.equal(cliToken);
      expect(env2).to.not.have.property('SVC_INITIAL_PROMPT');
      const sandboxes = await srv.db.db.rows<{ state: string }>({ text: 'SELECT state FROM session_sandboxes WHERE session_id = $1 ORDER BY created_at', values: [s.session_id] });
      expect(sandboxes.map((x) => x.state)).to.deep.equal(['archived', 'active']);

      // Prompt and abort reach the daemon.
      const prompted = await api.post(`${one}/prompt`, { text: 'do it' });
      expect(prompted.status, JSON.stringify(prompted.body)).to.equal(202);
      expect((await api.post(`${one}/prompt`, { text: '' })).status).to.equal(400);
      expect((await api.post(`${one}/abort`, {})).status).to.equal(200);

      // History, and the projections rebuild to the same rows.
      const events = await api.get(`${one}/events`);
      expect(events.body.events.map((e: any) => e.type)).to.include.members(['SessionCreated', 'SessionBranchCut', 'SandboxRequested', 'SandboxActive', 'SessionRunning', 'SessionStopped', 'SandboxArchived', 'SessionRestarted']);
      expect(JSON.stringify(events.body)).to.not.include('127.0.0.1');
      expect((await rebuildProjections(srv.db.db, { verify: true })).differences).to.deep.equal([]);
      // A drifted sandbox row is caught, and a rebuild repairs it.
      await srv.db.db.run({ text: "UPDATE session_sandboxes SET state = 'error' WHERE session_id = $1 AND state = 'archived'", values: [s.session_id] });
      const drift = await rebuildProjections(srv.db.db, { verify: true });
      expect(drift.differences.map((d) => d.table)).to.deep.equal(['session_sandboxes', 'session_sandboxes']);
      await rebuildProjections(srv.db.db, { verify: false });
      expect((await rebuildProjections(srv.db.db, { verify: true })).differences).to.deep.equal([]);
      expect((await api.get(one)).body.session.status).to.equal('running');

      // List and filter.
      expect((await api.get(`${sessions}?status=running`)).body.sessions.map((x: any) => x.session_id)).to.deep.equal([s.session_id]);
      expect((await api.get(`${sessions}?status=stopped`)).body.sessions).to.deep.equal([]);
      expect((await api.get(`${sessions}?status=bogus`)).status).to.equal(400);

      // Remove: 204, the row goes, the branch stays.
      const env2Token = env2.SVC_CLI_TOKEN!;
      const gw2 = gatewayUrl(srv.dataDir, again.sandbox.sandbox_id);
      const cred2 = await client(gw2, env2.SVC_TOKEN!).get(`/v1/projects/${s.project_id}/git/clone-credential`);
      expect(cred2.status).to.equal(200);
      expect((await client(gw2, cred2.body.password).get(`/v1/projects/${s.project_id}`)).status).to.equal(200);
      // The first sandbox's gateway went with it: nothing listens there any more.
      expect(await client(gw, cred2.body.password).get('/v1/projects').then(() => 'answered', () => 'refused')).to.equal('refused');
      expect((await api.call('DELETE', one)).status).to.equal(204);
      expect((await client(gw2, cred2.body.password).get(`/v1/projects/${s.project_id}`).catch(() => ({ status: 401 }))).status, 'clone credential after remove').to.equal(401);
      expect((await api.get(one)).status).to.equal(404);
      expect((await api.call('DELETE', one)).status).to.equal(404);
      expect((await client(srv.url, env2Token).get(`/v1/projects/${s.project_id}`)).status).to.equal(401);
      expect(repo.tip(s.session_id)).to.equal(repo.tip('main'));
      expect((await rebuildProjections(srv.db.db, { verify: true })).differences).to.deep.equal([]);
    }));

  it('stop or remove while provisioning leaves no sandbox behind', () =>
    withSessionProject({ slug: 'race' }, async ({ srv, api, sessions }) => {
      const a = (await api.post(sessions, {})).body.session.session_id;
      const b = (await api.post(sessions, {})).body.session.session_id;
      expect((await api.post(`${sessions}/${a}/stop`, {})).body.session.status).to.equal('stopped');
      expect((await api.call('DELETE', `${sessions}/${b}`)).status).to.equal(204);
      // Whatever step the provisioning job was at, it ends without a live sandbox.
      let left = -1;
      await until(
        async () => {
          const pending = await srv.db.db.one<{ n: number }>({
            text: "SELECT count(*)::int AS n FROM session_sandboxes WHERE session_id = $1 AND state IN ('provisioning', 'active')",
            values: [a],
          });
          left = (await processesOf(a)) + (await processesOf(b)) + pending!.n;
          return left === 0;
        },
        'no live sandbox left',
        { timeoutMs: 20_000, maxIntervalMs: 100 },
      ).catch(() => undefined);
      expect(left, 'sandbox processes or live sandbox rows left').to.equal(0);
      expect((await api.get(`${sessions}/${a}`)).body.session.status).to.equal('stopped');
      expect((await api.get(`${sessions}/${b}`)).status).to.equal(404);
    }));

  it('bad input is a 4xx with the contract body', () =>
    withSessionProject({ slug: 'bad' }, async ({ api, sessions }) => {
      for (const body of [{ base_ref: '-x' }, { base_ref: 'a..b' }, { extra: 1 }, { agent: '' }, { prompt: '' }, { model: 'a b' }]) {
        const r = await api.post(sessions, body);
        expect(r.status, JSON.stringify(body)).to.equal(400);
        expect(r.body.error).to.be.a('string');
      }
      // One clear message per field, saying what is wrong.
      for (const [body, path, message] of [
        [{ agent: '' }, 'agent', 'must not be empty'],
        [{ agent: '../x' }, 'agent', 'must start with a letter or digit (not ".")'],
        [{ agent: 'a/../x' }, 'agent', 'must not contain an empty, . or .. path segment'],
        [{ agent: 'a/' }, 'agent', 'must not end with /'],
        [{ model: 'a b' }, 'model', 'must use only letters, digits and . _ : / @ + - (not " ")'],
        [{ model: 'm'.repeat(201) }, 'model', 'must be at most 200 characters'],
      ] as const) {
        const r = await api.post(sessions, body);
        expect(r.status, JSON.stringify(body)).to.equal(400);
        expect(r.body, JSON.stringify(body)).to.deep.equal({ error: 'Validation failed', message: `${path}: ${message}`, issues: [{ path, message }] });
      }
      expect((await api.get(`${sessions}/not-a-uuid`)).status).to.equal(404);
      expect((await api.get(`${sessions}/00000000-0000-4000-8000-000000000000`)).status).to.equal(404);
      expect((await api.post(`${sessions}/00000000-0000-4000-8000-000000000000/stop`, {})).status).to.equal(404);
      expect((await api.get(`${sessions}/00000000-0000-4000-8000-000000000000/agent/x`)).status).to.equal(404);
      expect((await api.get(`${sessions}/00000000-0000-4000-8000-000000000000/preview/0/x`)).status).to.equal(400);
      expect((await api.get(`${sessions}/00000000-0000-4000-8000-000000000000/preview/99999/x`)).status).to.equal(400);
    }));

  it('an agent neither built in nor defined by the repo is a 400 naming the choices; a repo agent (config_dir from svc.toml) and a built-in are taken', () =>
    withSessionProject({ slug: 'agents' }, async ({ api, sessions, repo }) => {
      const unknown = await api.post(sessions, { agent: 'nope' });
      expect(unknown.status).to.equal(400);
      expect(unknown.body).to.include({ error: 'Validation failed' });
      expect(unknown.body.message).to.equal("Unknown agent 'nope': use build, plan or one defined at .svc/agent/agents/<name>.md on main.");
      expect(unknown.body.issues).to.deep.equal([{ path: 'agent', message: 'unknown agent; use build, plan or one defined at .svc/agent/agents/<name>.md on main' }]);
      expect((await api.post(sessions, { agent: '../../svc' })).status).to.equal(400);
      expect((await api.get(sessions)).body.sessions).to.deep.equal([]);

      await repo.commit('main', { 'svc.toml': '[agent]\nconfig_dir = "ai"\n', 'ai/agents/reviewer.md': '---\ndescription: Reviews.\n---\nReview.\n' });
      const defined = await api.post(sessions, { agent: 'reviewer' });
      expect(defined.status, JSON.stringify(defined.body)).to.equal(201);
      expect(defined.body.session.agent).to.equal('reviewer');
      const elsewhere = await api.post(sessions, { agent: 'default' });
      expect(elsewhere.status).to.equal(400);
      expect(elsewhere.body.message).to.contain('ai/agents/<name>.md on main');
      expect((await api.post(sessions, { agent: 'plan' })).status).to.equal(201);
    }));

  it('a base branch that does not exist ends failed with the error, and frees its cap slot', () =>
    withSessionProject({ slug: 'nobase', env: { SVC_SESSION_CAP: '1' } }, async ({ api, sessions }) => {
      const r = await api.post(sessions, { base_ref: 'nope' });
      expect(r.status).to.equal(201);
      const s = await waitForStatus(api, `${sessions}/${r.body.session.session_id}`, ['failed', 'running']);
      expect(s.status).to.equal('failed');
      expect(s.error.code).to.equal('branch_failed');
      expect(s.error.message).to.match(/nope/);
      expect((await api.post(sessions, {})).status).to.equal(201);
      const third = await api.post(sessions, {});
      expect(third.status).to.equal(429);
      expect(third.body).to.include({ error: 'Too many sessions', limit: 1 });
      expect(third.headers.get('retry-after')).to.equal('30');
    }));
});
