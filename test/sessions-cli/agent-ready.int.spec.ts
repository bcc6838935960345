import { expect } from 'chai';
import { chmod } from 'node:fs/promises';
import { chatRuntime } from './support.js';
import { runSvc, sandbox, type Sandbox } from '../cli/helpers.js';
import { withSessionProject, type SessionProject } from '../support/sessions.js';

/** `svc sessions new` / `chat --new` wait for the agent; with no model, chat says so at once. */
describe('svc sessions: agent readiness and no model (real server, scripted runtime)', function () {
  this.timeout(120_000);
  let sb: Sandbox;
  beforeEach(async () => {
    sb = await sandbox();
    await chmod(chatRuntime, 0o755);
  });
  afterEach(() => sb.cleanup());
  const svc = (p: SessionProject, slug: string, args: string[]) =>
    runSvc(args, { configPath: sb.configPath, cwd: sb.dir, env: { SVC_API_URL: `${p.srv.url}/v1`, SVC_CLI_TOKEN: p.srv.token, SVC_PROJECT_ID: slug } });

  it('new waits until the agent is ready (--no-wait does not); info shows agent_state and tokens', () =>
    withSessionProject({ slug: 'rdy', env: { SVC_AGENT_RUNTIME: chatRuntime } }, async (p) => {
      await p.api.call('PUT', '/v1/projects/rdy/secrets/FAKE_RUNTIME_BOOT_DELAY_MS', { value: '1500' });
      const made = await svc(p, 'rdy', ['sessions', 'new', '--json']);
      expect(made.code, made.stderr).to.equal(0);
      const s = JSON.parse(made.stdout);
      expect(s).to.include({ status: 'running', agent_state: 'ready' });
      const quick = await svc(p, 'rdy', ['sessions', 'new', '--no-wait', '--json']);
      expect(JSON.parse(quick.stdout)).to.include({ status: 'provisioning', agent_state: 'starting' });
      const info = await svc(p, 'rdy', ['sessions', 'info', s.session_id]);
      expect(info.stdout).to.contain('agent_state:\tready').and.contain('tokens:\t0 in, 0 out (0 model calls)');
    }));

  it('chat --new with no model: exit 1 within 2 s of ready, one line saying what to configure', () =>
    withSessionProject({ slug: 'nom', env: { SVC_AGENT_RUNTIME: chatRuntime, SVC_LLM_UPSTREAM_URL: '', SVC_LLM_UPSTREAM_KEY: '', SVC_LLM_MODEL: '' } }, async (p) => {
      const made = await svc(p, 'nom', ['sessions', 'new']);
      expect(made.code, made.stderr).to.equal(0);
      const t0 = Date.now();
      const r = await svc(p, 'nom', ['sessions', 'chat', made.stdout.trim(), '--prompt', 'hello']);
      expect(Date.now() - t0).to.be.below(2000);
      expect(r.code).to.equal(1);
      const errors = r.stderr.split('\n').filter((l) => l.startsWith('error:'));
      expect(errors).to.have.length(1);
      expect(errors[0]).to.match(/^error: No model is configured for this session: set SVC_LLM_UPSTREAM_URL.*docs\/models\.md/);
      const fresh = await svc(p, 'nom', ['sessions', 'chat', '--new', '--prompt', 'hello']);
      expect(fresh.code).to.equal(1);
      expect(fresh.stderr).to.match(/error: No model is configured/);
    }));
});
