import { expect } from 'chai';
import { client } from '../../support/http.js';
import { agentReady, waitForStatus, withSessionProject } from '../../support/sessions.js';
import { until } from '../../support/wait.js';
import { runSvc, sandbox } from '../../cli/helpers.js';

/** Unset ('' is unset): no gateway, no server model. */
const NO_MODEL = { SVC_LLM_UPSTREAM_URL: '', SVC_LLM_UPSTREAM_KEY: '', SVC_LLM_MODEL: '' };

describe('sessions: agent readiness, no model, failures that say why (scripted runtime)', function () {
  this.timeout(120_000);

  it('agent_state: starting while the runtime boots (status already running), ready once it answers, stopped with the session', () =>
    withSessionProject({ slug: 'ready' }, async ({ api, sessions }) => {
      // The scripted runtime takes 1.5 s to answer after the daemon starts it (a project secret reaches its env).
      expect((await api.call('PUT', '/v1/projects/ready/secrets/FAKE_RUNTIME_BOOT_DELAY_MS', { value: '1500' })).status).to.be.oneOf([200, 201, 204]);
      const created = (await api.post(sessions, {})).body.session;
      expect(created.agent_state).to.equal('starting');
      const one = `${sessions}/${created.session_id}`;
      const seen = new Set<string>();
      for (;;) {
        const s = (await api.get(one)).body.session;
        seen.add(`${s.status}/${s.agent_state}`);
        if (s.agent_state !== 'starting' || s.status === 'failed') break;
        await new Promise((r) => setTimeout(r, 25));
      }
      expect([...seen]).to.include('running/starting').and.include('running/ready');
      const events = (await api.get(`${one}/events`)).body.events.map((e: { type: string }) => e.type);
      expect(events.indexOf('SessionAgentReady')).to.be.greaterThan(events.indexOf('SessionRunning'));
      expect((await api.get(sessions)).body.sessions[0].agent_state).to.equal('ready');
      expect((await api.post(`${one}/stop`, {})).body.session.agent_state).to.equal('stopped');
    }));

  it('a server stop while the agent is starting ends at once (not at the provisioning deadline); the restarted server waits again and marks it ready', () =>
    withSessionProject({ slug: 'restart' }, async ({ srv, api, sessions }) => {
      // The runtime answers 8 s after the daemon starts it: the stop below comes well before.
      expect((await api.call('PUT', '/v1/projects/restart/secrets/FAKE_RUNTIME_BOOT_DELAY_MS', { value: '8000' })).status).to.be.oneOf([200, 201, 204]);
      const one = `${sessions}/${(await api.post(sessions, {})).body.session.session_id}`;
      const running = await waitForStatus(api, one, ['running', 'failed']);
      expect(running.status).to.equal('running');
      expect(running.agent_state).to.equal('starting');
      // The provisioning job was still waiting for the runtime: the stop must not wait with it.
      const { stopMs } = await srv.restart();
      expect(stopMs).to.be.below(3000);
      const api2 = client(srv.url, srv.token);
      const after = (await api2.get(one)).body.session;
      expect(after.status).to.equal('running');
      expect(after.agent_state).to.be.oneOf(['starting', 'ready']);
      // Nobody else waits: the restarted server's recovery picks the wait up again.
      let ready = after;
      await until(async () => (ready = (await api2.get(one)).body.session).agent_state !== 'starting', 'the agent leaving starting');
      expect(ready.agent_state).to.equal('ready');
      expect(ready.status).to.equal('running');
    }));

  it('no model: the session starts, a prompt is a 409 at once naming what to configure; a provider model needs its key as a secret', () =>
    withSessionProject({ slug: 'nomodel', env: NO_MODEL }, async ({ api, sessions }) => {
      const s = (await api.post(sessions, {})).body.session;
      const one = `${sessions}/${s.session_id}`;
      expect((await waitForStatus(api, one, ['running', 'failed'])).status).to.equal('running');
      const env = (await agentReady(api, `${one}/agent/fake/state`)).body.env as Record<string, string>;
      expect(Object.keys(env).filter((k) => /^SVC_(LLM|YOLO)_/.test(k))).to.deep.equal([]);
      expect(env).to.not.have.property('SVC_AGENT_MODEL');
      const t0 = Date.now();
      const r = await api.post(`${one}/prompt`, { text: 'hello' });
      expect(Date.now() - t0).to.be.below(2000);
      expect(r.status).to.equal(409);
      expect(r.body).to.include({ error: 'No model', code: 'no_model' });
      expect(r.body.message).to.match(/SVC_LLM_UPSTREAM_URL/).and.match(/docs\/models\.md/);

      // A first prompt given at create would be lost in the sandbox: the same 409, and no session.
      const withPrompt = await api.post(sessions, { prompt: 'hello' });
      expect(withPrompt.status).to.equal(409);
      expect(withPrompt.body.code).to.equal('no_model');
      expect((await api.get(sessions)).body.sessions).to.have.length(1);

      const p = (await api.post(sessions, { model: 'anthropic/claude-test' })).body.session;
      const two = `${sessions}/${p.session_id}`;
      await waitForStatus(api, two, ['running']);
      const refused = await api.post(`${two}/prompt`, { text: 'hello' });
      expect(refused.status).to.equal(409);
      expect(refused.body.message).to.match(/ANTHROPIC_API_KEY/);
      await api.call('PUT', '/v1/projects/nomodel/secrets/ANTHROPIC_API_KEY', { value: 'sk-ant-test' });
      // The secret reaches the running sandbox (its runtime restarts with it).
      let state = await agentReady(api, `${two}/agent/fake/state`);
      while (state.body.env.ANTHROPIC_API_KEY !== 'sk-ant-test') state = await agentReady(api, `${two}/agent/fake/state`);
      expect(state.body.env.SVC_AGENT_MODEL).to.equal('anthropic/claude-test');
      let taken = await api.post(`${two}/prompt`, { text: 'hello' });
      while (taken.status === 503) taken = await api.post(`${two}/prompt`, { text: 'hello' });
      expect(taken.status, JSON.stringify(taken.body)).to.equal(202);
    }));

  it('no model: svc sessions chat --new --prompt is refused before any sandbox boots (409 naming what to set), so nothing counts against the cap', () =>
    withSessionProject({ slug: 'nomodel-chat', env: NO_MODEL }, async ({ srv, api, sessions }) => {
      const refused = await api.post(sessions, { expect_prompt: true });
      expect(refused.status).to.equal(409);
      expect(refused.body).to.include({ code: 'no_model' });
      expect(refused.body.message).to.match(/SVC_LLM_UPSTREAM_URL/);
      const sb = await sandbox();
      try {
        const r = await runSvc(['sessions', 'chat', '--new', '--prompt', 'hello'], {
          configPath: sb.configPath,
          cwd: sb.dir,
          env: { SVC_API_URL: `${srv.url}/v1`, SVC_CLI_TOKEN: srv.token, SVC_PROJECT_ID: 'nomodel-chat' },
        });
        expect(r.code).to.equal(1);
        expect(r.stderr).to.match(/SVC_LLM_UPSTREAM_URL/).and.match(/docs\/models\.md/);
        expect(r.stderr).to.not.include('Created session');
      } finally {
        await sb.cleanup();
      }
      // No session, no sandbox: nothing was admitted against the account's cap.
      expect((await api.get(`${sessions}?status=all`)).body.sessions).to.deep.equal([]);
      const rows = await srv.db.db.rows({ text: 'SELECT 1 FROM session_sandboxes', values: [] });
      expect(rows).to.have.length(0);
    }));

  it('a sandbox that fails to start keeps its log tail, secrets redacted, on the row (not in an event)', () =>
    withSessionProject({ slug: 'fails' }, async ({ api, sessions }) => {
      const secret = 'hunter2-very-secret-path';
      // Project secrets reach the sandbox's environment: this one makes its node refuse to
      // start, printing the (secret) module path.
      await api.call('PUT', '/v1/projects/fails/secrets/REPO_PATH', { value: secret });
      await api.call('PUT', '/v1/projects/fails/secrets/NODE_OPTIONS', { value: `--require /nonexistent/${secret}.js` });
      const s = (await api.post(sessions, {})).body.session;
      const one = `${sessions}/${s.session_id}`;
      const failed = await waitForStatus(api, one, ['failed', 'running'], 60_000);
      expect(failed.status).to.equal('failed');
      expect(failed.agent_state).to.equal('error');
      expect(failed.error.log).to.be.a('string').and.match(/Cannot find module/).and.include('/nonexistent/[redacted].js');
      expect(JSON.stringify(failed)).to.not.include(secret);
      const events = JSON.stringify((await api.get(`${one}/events`)).body);
      expect(events).to.not.include(secret);
      expect(events).to.not.include('Cannot find module');
      // The list shows the error without the log (GET of one session carries it).
      expect((await api.get(sessions)).body.sessions[0].error).to.not.have.property('log');
    }));
});
