import { expect } from 'chai';
import { eventually, makeRemote, startDaemon, tempDir, type DaemonHandle } from './support/harness.js';

/** The control surface of a real `svc-agent` process fronting the scripted runtime. */
describe('svc-agent control surface (e2e)', function () {
  this.timeout(60_000);
  let t: ReturnType<typeof tempDir>;
  let remote: ReturnType<typeof makeRemote>;
  let d: DaemonHandle;

  const runtimeState = async () => {
    const res = await fetch(`${d.url}/fake/state`, { headers: { 'x-svc-user-context': d.sign() } });
    return (await res.json()) as {
      pid: number;
      argv: string[];
      cwd: string;
      env: Record<string, string>;
      sessions: { id: string; aborted: number }[];
      prompts: { session_id: string; body: { parts: { type: string; text: string }[]; agent?: string; model?: unknown } }[];
    };
  };

  before(async () => {
    t = tempDir();
    remote = makeRemote(t.dir, {
      files: { 'svc.toml': '[agent]\nconfig_dir = "tools/agent"\n', 'tools/agent/agents/dev.md': '# dev\n' },
    });
    d = await startDaemon({
      root: t.dir,
      env: {
        SVC_PROJECT_AUTO_CLONE: '1',
        SVC_REPO_URL: remote.url,
        SVC_BRANCH_NAME: remote.branch,
        SVC_AGENT_NAME: 'dev',
        SVC_AGENT_MODEL: 'anthropic/claude-sonnet-4',
        SVC_BOOTSTRAP_AGENT_SESSION: '1',
        SVC_INITIAL_PROMPT: 'fix the bug',
        SVC_ABORT_TIMEOUT_MS: '500',
        PROJECT_SECRET_X: 'from-boot',
      },
    });
    await d.waitForAgent('running');
  });

  after(async () => {
    await d?.stop();
    t?.cleanup();
  });

  it('reports health without auth: daemon, agent state, repo, branch, commit', async () => {
    const h = await d.health();
    expect(h).to.deep.equal({
      daemon: 'ok',
      agent: 'running',
      repo: remote.url,
      branch: remote.branch,
      commit: remote.tip(remote.branch),
    });
  });

  it('launched the runtime as `serve --port P --hostname 127.0.0.1` with HOME and the config dir from svc.toml', async () => {
    const s = await runtimeState();
    expect(s.argv).to.deep.equal(['serve', '--port', String(d.agentPort), '--hostname', '127.0.0.1']);
    expect(s.cwd).to.equal(d.workspace);
    expect(s.env.HOME).to.equal(d.home);
    expect(s.env.OPENCODE_CONFIG_DIR).to.equal(`${d.workspace}/tools/agent`);
    expect(s.env.PROJECT_SECRET_X).to.equal('from-boot');
  });

  it('opened the bootstrap session with the initial prompt, agent and model', async () => {
    const s = await eventually(async () => {
      const st = await runtimeState();
      return st.prompts.length > 0 && st;
    });
    expect(s.prompts[0]!.body).to.deep.equal({
      parts: [{ type: 'text', text: 'fix the bug' }],
      agent: 'dev',
      model: { providerID: 'anthropic', modelID: 'claude-sonnet-4' },
    });
  });

  it('refuses the control routes without the bearer token: 401 with error and message', async () => {
    for (const path of ['/svc/prompt', '/svc/abort', '/svc/env', '/svc/refresh', '/svc/unknown']) {
      const none = await fetch(`${d.url}${path}`, { method: 'POST', body: '{}' });
      expect(none.status, path).to.equal(401);
      const body = (await none.json()) as { error: string; message: string };
      expect(body.error).to.equal('Unauthorized');
      expect(body.message).to.be.a('string').and.not.empty;
      expect((await d.control(path, {}, 'wrong-token')).status, path).to.equal(401);
    }
    // A signed user context is not a control credential.
    const ctx = await fetch(`${d.url}/svc/prompt`, { method: 'POST', headers: { 'x-svc-user-context': d.sign() }, body: '{"text":"x"}' });
    expect(ctx.status).to.equal(401);
  });

  it('rejects bad bodies with 400 and issues, oversized ones with 413, unknown routes with 404', async () => {
    const cases: [string, unknown][] = [
      ['/svc/prompt', {}],
      ['/svc/prompt', { text: '' }],
      ['/svc/prompt', { text: 'x', extra: 1 }],
      ['/svc/prompt', { text: 5 }],
      ['/svc/prompt', [1, 2]],
      ['/svc/abort', { session_id: 7 }],
      ['/svc/env', {}],
      ['/svc/env', { set: { 'BAD NAME': 'x' } }],
      ['/svc/env', { set: { HOME: '/root' } }],
      ['/svc/env', { set: { A: 1 } }],
      ['/svc/env', { set: { A: 'x' }, unset: ['A'] }],
      ['/svc/refresh', { force: true }],
    ];
    for (const [path, body] of cases) {
      const r = await d.control(path, body);
      expect(r.status, `${path} ${JSON.stringify(body)}`).to.equal(400);
      expect(r.body.error).to.equal('Validation failed');
      expect(r.body.issues).to.be.an('array').that.is.not.empty;
    }
    const notJson = await d.control('/svc/prompt', '{"text":');
    expect(notJson.status).to.equal(400);
    expect(notJson.body).to.include({ error: 'Bad request' });
    expect((await d.control('/svc/prompt', JSON.stringify({ text: 'x'.repeat(1024 * 1024 + 10) }))).status).to.equal(413);
    expect((await d.control('/svc/nope', {})).status).to.equal(404);
    const get = await fetch(`${d.url}/svc/prompt`, { headers: { authorization: `Bearer ${d.token}` } });
    expect(get.status).to.equal(405);
  });

  it('POST /svc/prompt creates a runtime session when none is given, then delivers to the given one', async () => {
    const first = await d.control('/svc/prompt', { text: 'hello' });
    expect(first.status).to.equal(202);
    expect(first.body).to.deep.include({ created: true });
    const id = first.body.session_id as string;
    const again = await d.control('/svc/prompt', { text: 'more', session_id: id });
    expect(again.status).to.equal(202);
    expect(again.body).to.deep.equal({ session_id: id, created: false });
    const s = await runtimeState();
    expect(s.prompts.filter((p) => p.session_id === id).map((p) => p.body.parts[0]!.text)).to.deep.equal(['hello', 'more']);
    const missing = await d.control('/svc/prompt', { text: 'x', session_id: 'ses_nope' });
    expect(missing.status).to.equal(404);
  });

  it('POST /svc/abort aborts the given session, or the last one prompted', async () => {
    const { body } = await d.control('/svc/prompt', { text: 'long task' });
    const id = body.session_id as string;
    expect(await d.control('/svc/abort', {})).to.deep.equal({ status: 200, body: { session_id: id, aborted: true, method: 'api' } });
    expect((await d.control('/svc/abort', { session_id: id })).body.method).to.equal('api');
    const s = await runtimeState();
    expect(s.sessions.find((x) => x.id === id)!.aborted).to.equal(2);
    expect((await d.control('/svc/abort', { session_id: 'ses_nope' })).status).to.equal(404);
  });

  it('POST /svc/env restarts the runtime with the new environment (and keeps it across restarts)', async () => {
    const before = await runtimeState();
    const r = await d.control('/svc/env', { set: { NEW_SECRET: 'v1', OTHER: 'o' }, unset: ['PROJECT_SECRET_X'] });
    expect(r.status).to.equal(200);
    expect(r.body).to.deep.include({ set: ['NEW_SECRET', 'OTHER'], unset: ['PROJECT_SECRET_X'] });
    expect(JSON.stringify(r.body)).to.not.include('v1'); // values are never echoed
    await d.waitForAgent('running');
    const after = await runtimeState();
    expect(after.pid).to.not.equal(before.pid);
    expect(after.env.NEW_SECRET).to.equal('v1');
    expect(after.env.PROJECT_SECRET_X).to.equal(undefined);
    expect(after.env.HOME).to.equal(d.home);
    expect(d.output()).to.not.include('"v1"');
  });

  it('POST /svc/abort kills the runtime process group when the runtime does not stop the run', async () => {
    await d.control('/svc/env', { set: { FAKE_RUNTIME_ABORT: 'hang' } });
    await d.waitForAgent('running');
    const before = await runtimeState();
    const { body } = await d.control('/svc/prompt', { text: 'stuck' });
    const r = await d.control('/svc/abort', { session_id: body.session_id });
    expect(r.body).to.deep.equal({ session_id: body.session_id, aborted: true, method: 'killed' });
    expect(() => process.kill(before.pid, 0)).to.throw(); // the old runtime is gone
    await d.waitForAgent('running');
    expect((await runtimeState()).pid).to.not.equal(before.pid);
    await d.control('/svc/env', { unset: ['FAKE_RUNTIME_ABORT'] });
    await d.waitForAgent('running');
  });

  it('POST /svc/refresh re-pulls a commit pushed to the session branch and restarts the runtime', async () => {
    const before = await runtimeState();
    const sha = remote.push(remote.branch, 'svc.toml', '[agent]\nconfig_dir = ".svc/other"\n');
    const r = await d.control('/svc/refresh');
    expect(r.status).to.equal(200);
    expect(r.body.commit).to.equal(sha);
    expect(r.body.previous_commit).to.not.equal(sha);
    const h = await d.waitForAgent('running');
    expect(h.commit).to.equal(sha);
    const after = await runtimeState();
    expect(after.pid).to.not.equal(before.pid);
    // The config dir is re-read from the refreshed svc.toml.
    expect(after.env.OPENCODE_CONFIG_DIR).to.equal(`${d.workspace}/.svc/other`);
  });

  it('POST /svc/refresh answers 409 when the local branch diverged, keeping local work', async () => {
    const { gitSync } = await import('./support/harness.js');
    gitSync(['-c', 'user.name=a', '-c', 'user.email=a@x', 'commit', '--allow-empty', '-m', 'local work'], d.workspace);
    const local = gitSync(['rev-parse', 'HEAD'], d.workspace);
    remote.push(remote.branch, 'other.txt', 'remote work');
    const r = await d.control('/svc/refresh');
    expect(r.status).to.equal(409);
    expect(r.body.error).to.equal('Conflict');
    expect(gitSync(['rev-parse', 'HEAD'], d.workspace)).to.equal(local);
  });
});
