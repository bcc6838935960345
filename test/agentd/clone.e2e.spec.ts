import { spawn } from 'node:child_process';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { expect } from 'chai';
import { startFakeApi, startGitHttpServer, type FakeApi, type GitHttpServer } from './support/git-http-server.js';
import { eventually, gitSync, makeRemote, startDaemon, tempDir, type DaemonHandle } from './support/harness.js';

function filesUnder(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = path.join(dir, name);
    return statSync(p).isDirectory() ? filesUnder(p) : [p];
  });
}

/** Boot clone over an authenticated HTTP remote with a just-in-time credential. */
describe('svc-agent clone with a fetched credential (e2e)', function () {
  this.timeout(60_000);
  const token = randomBytes(24).toString('hex');
  const password = `clonepass-${randomBytes(12).toString('hex')}`;
  const username = 'x-access-token';
  let t: ReturnType<typeof tempDir>;
  let remote: ReturnType<typeof makeRemote>;
  let gitServer: GitHttpServer;
  let api: FakeApi;
  let d: DaemonHandle | undefined;

  beforeEach(async () => {
    t = tempDir();
    remote = makeRemote(t.dir);
    gitServer = await startGitHttpServer(t.dir, username, password);
    api = await startFakeApi(token, { username, password });
  });
  afterEach(async () => {
    await d?.stop();
    d = undefined;
    await Promise.all([gitServer.close(), api.close()]);
    t.cleanup();
  });

  const env = (extra: Record<string, string> = {}) => ({
    SVC_TOKEN: token,
    SVC_PROJECT_AUTO_CLONE: '1',
    SVC_REPO_URL: `${gitServer.url}/remote.git`,
    SVC_BRANCH_NAME: remote.branch,
    SVC_API_URL: api.url,
    SVC_PROJECT_ID: 'proj-1',
    ...extra,
  });

  it('clones the session branch with the credential, which appears nowhere on disk or in the logs', async () => {
    d = await startDaemon({ root: t.dir, env: env() });
    const h = await d.waitForAgent('running');
    expect(h.commit).to.equal(remote.tip(remote.branch));
    expect(h.branch).to.equal(remote.branch);
    expect(api.requests).to.have.length(1);
    expect(api.requests[0]).to.deep.equal({ path: '/v1/projects/proj-1/git/clone-credential', authorization: `Bearer ${token}` });
    expect(gitServer.users.length).to.be.greaterThan(0);

    const gitConfig = readFileSync(path.join(d.workspace, '.git', 'config'), 'utf8');
    expect(gitConfig).to.include(`${gitServer.url}/remote.git`);
    expect(gitConfig).to.not.include(password);
    // Only the helper command for the agent's own pushes is stored.
    expect(gitConfig).to.match(/helper = .*svc-agent\.js' git-credential/);
    for (const f of filesUnder(path.join(d.workspace, '.git'))) {
      expect(readFileSync(f).includes(password), f).to.equal(false);
    }
    expect(d.output()).to.include('fetched git clone credential');
    expect(d.output()).to.not.include(password);
    // Nor is it in the runtime's environment.
    const state = (await (await fetch(`${d.url}/fake/state`, { headers: { 'x-svc-user-context': d.sign() } })).json()) as {
      env: Record<string, string>;
    };
    expect(JSON.stringify(state.env)).to.not.include(password);
  });

  it("lets the agent push with `git push origin HEAD` in the runtime's environment, via a fresh credential", async () => {
    d = await startDaemon({ root: t.dir, env: env() });
    await d.waitForAgent('running');
    const state = (await (await fetch(`${d.url}/fake/state`, { headers: { 'x-svc-user-context': d.sign() } })).json()) as {
      env: Record<string, string>;
    };
    const agentEnv = { ...state.env, GIT_AUTHOR_NAME: 'agent', GIT_AUTHOR_EMAIL: 'a@x', GIT_COMMITTER_NAME: 'agent', GIT_COMMITTER_EMAIL: 'a@x' };
    // Asynchronous: the git server and the fake API live in this process.
    const run = (args: string[]) =>
      new Promise<{ stderr: string }>((resolve, reject) => {
        const c = spawn('git', args, { cwd: d!.workspace, env: agentEnv, stdio: ['ignore', 'ignore', 'pipe'] });
        let stderr = '';
        c.stderr.setEncoding('utf8').on('data', (x: string) => (stderr += x));
        const timer = setTimeout(() => c.kill('SIGKILL'), 20_000);
        c.on('close', (code) => {
          clearTimeout(timer);
          if (code === 0) resolve({ stderr });
          else reject(new Error(`git ${args.join(' ')} exited ${code}: ${stderr}`));
        });
      });
    await run(['commit', '--allow-empty', '-m', 'agent work']);
    const push = await run(['push', 'origin', 'HEAD']);
    expect(remote.tip(remote.branch)).to.equal(gitSync(['rev-parse', 'HEAD'], d.workspace));
    expect(api.requests.length).to.be.greaterThan(1);
    expect(push.stderr).to.not.include(password);
  });

  it('fetches a fresh credential for every refresh', async () => {
    d = await startDaemon({ root: t.dir, env: env() });
    await d.waitForAgent('running');
    const sha = remote.push(remote.branch, 'new.txt', 'new');
    const r = await d.control('/svc/refresh');
    expect(r.status).to.equal(200);
    expect(r.body.commit).to.equal(sha);
    expect(api.requests).to.have.length(2);
    expect(d.output()).to.not.include(password);
  });

  it('keeps serving when the credential is refused: no repo, runtime still started, clear log', async () => {
    d = await startDaemon({ root: t.dir, env: env({ SVC_PROJECT_ID: 'proj-1', SVC_CLONE_ATTEMPTS: '1', SVC_API_URL: `${api.url}/wrong` }) });
    await d.waitForAgent('running');
    expect((await d.health()).commit).to.equal(null);
    await eventually(async () => /clone-credential request answered 404/.test(d!.output()), 5_000, 'log line');
    expect(gitServer.users).to.have.length(0);
    const r = await d.control('/svc/refresh');
    expect(r.status).to.equal(409);
  });

  it('does not ask the API for a credential for a file:// remote', async () => {
    d = await startDaemon({ root: t.dir, env: env({ SVC_REPO_URL: remote.url }) });
    const h = await d.waitForAgent('running');
    expect(h.commit).to.equal(remote.tip(remote.branch));
    expect(api.requests).to.have.length(0);
  });

  it('starts a session branch missing on the remote from the base ref', async () => {
    d = await startDaemon({ root: t.dir, env: env({ SVC_REPO_URL: remote.url, SVC_BRANCH_NAME: 'session-new', SVC_BASE_REF: 'main' }) });
    const h = await d.waitForAgent('running');
    expect(h.branch).to.equal('session-new');
    expect(h.commit).to.equal(remote.tip('main'));
  });
});
