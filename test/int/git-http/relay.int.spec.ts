import { expect } from 'chai';
import { chmodSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { client, gatewayUrl } from '../../support/http.js';
import { authedUrl, workDir, type WorkDir } from '../../support/git-client.js';
import { fixtureRepo, type FixtureRepo } from '../../support/repo.js';
import { startTestServer, type TestServer } from '../../support/server.js';
import { agentReady, fakeRuntime, killSandboxes, killSandboxesUnder, waitForStatus } from '../../support/sessions.js';
import { startGitHttpServer, type GitHttpServer } from '../../agentd/support/git-http-server.js';
import { AGENT_BRANCH_MESSAGE, CR_ONLY_MESSAGE, relayPushArgs } from '../../../infra/git/pre-receive.js';

/**
 * Every push relayed: a project on a remote repository that needs credentials
 * (git's own http-backend behind HTTP Basic, the credentials stored with the project).
 * The sandbox clones and pushes through the server's smart HTTP with agent-grade tokens,
 * through its own gateway (the only door its credentials open: on the public listener
 * they are 401); the process sandbox's forwarder listens on a host loopback port, so the
 * test pushes with the agent's credential exactly where the sandbox does;
 * the server fetches from the remote and relays accepted pushes to it with the stored
 * credentials, which never enter the sandbox. The agent's session branch reaches the
 * remote; main and another session's branch do not; a push the remote refuses is refused.
 */
describe('smart HTTP relay: remote repositories through the server, stored credentials never in a sandbox', function () {
  this.timeout(120_000);
  let srv: TestServer;
  let repo: FixtureRepo;
  let remote: GitHttpServer;
  let w: WorkDir;
  let serverUrl: string;
  /** The relay as the sandbox reaches it: its gateway forwarder's loopback port, never the public URL. */
  let sandboxRepoUrl: string;
  let sandboxId: string;
  let session: { id: string; env: Record<string, string> };
  const P = '/v1/projects/relayed';

  before(async () => {
    repo = await fixtureRepo();
    remote = await startGitHttpServer(path.dirname(repo.bare), 'agent-user', 's3cret-pass');
    srv = await startTestServer({ env: { SVC_AGENT_RUNTIME: fakeRuntime } });
    const api = client(srv.url, srv.token);
    const created = await api.post('/v1/projects', { name: 'relayed', slug: 'relayed', repo_url: `${remote.url.replace('http://', 'http://agent-user:s3cret-pass@')}/remote.git` });
    expect(created.status, JSON.stringify(created.body)).to.equal(201);
    serverUrl = `${srv.url}/git/${created.body.project.project_id}.git`;
    const s = (await api.post(`${P}/sessions`, {})).body.session;
    const running = await waitForStatus(api, `${P}/sessions/${s.session_id}`, ['running', 'failed'], 60_000);
    expect(running.status, JSON.stringify(running.error)).to.equal('running');
    const env = (await agentReady(api, `${P}/sessions/${s.session_id}/agent/fake/state`)).body.env as Record<string, string>;
    session = { id: s.session_id, env };
    const gateway = new URL(env.SVC_API_URL!).origin;
    expect(gateway).to.not.equal(new URL(srv.url).origin);
    sandboxRepoUrl = `${gateway}/git/${created.body.project.project_id}.git`;
    w = await workDir();
  });

  after(async () => {
    await w?.cleanup();
    if (srv) await killSandboxes(srv.db);
    await srv?.stop();
    if (srv) await killSandboxesUnder(srv.dataDir);
    await remote?.close();
    await repo?.cleanup();
  });

  it('the sandbox cloned through the server: its clone points at the server, no stored credential anywhere in it', async () => {
    const row = (await srv.db.db.one<{ ref: string; sandbox_id: string }>({ text: "SELECT ref, sandbox_id FROM session_sandboxes WHERE session_id = $1 AND state = 'active'", values: [session.id] }))!;
    const environ = readFileSync(`/proc/${row.ref}/environ`, 'utf8');
    expect(environ).to.not.include('s3cret');
    expect(JSON.stringify(session.env)).to.not.include('s3cret');
    const ws = session.env.SVC_WORKSPACE!;
    const config = readFileSync(path.join(ws, '.git', 'config'), 'utf8');
    // The clone's remote is the server's relay as the sandbox reaches it (its gateway), not
    // the public URL and never the remote; no credential of any kind is stored in it.
    expect(config).to.include(sandboxRepoUrl).and.not.include(serverUrl).and.not.include('s3cret').and.not.include(remote.url).and.not.include('svc_pat_');
    // The clone credential is an agent token for the server, never the remote's, and
    // given only through the sandbox's own gateway: on the public listener it is 401.
    sandboxId = row.sandbox_id;
    expect((await client(srv.url, session.env.SVC_TOKEN!).get(`${P}/git/clone-credential`)).status).to.equal(401);
    const cred = await client(gatewayUrl(srv.dataDir, sandboxId), session.env.SVC_TOKEN!).get(`${P}/git/clone-credential`);
    expect(cred.status, JSON.stringify(cred.body)).to.equal(200);
    expect(cred.body).to.include({ username: 'x-access-token', repo_url: serverUrl });
    expect(cred.body.password).to.match(/^svc_pat_/);
    expect(JSON.stringify(cred.body)).to.not.include('s3cret');
  });

  it('a fetch through the server sees the remote as it is now', async () => {
    const c = await w.run(['clone', '-q', authedUrl(serverUrl, srv.token), '.']);
    expect(c.code, c.stderr).to.equal(0);
    const moved = await repo.commit('main', { 'upstream.txt': 'moved upstream\n' });
    await w.ok(['fetch', '-q', 'origin']);
    expect(await w.ok(['rev-parse', 'origin/main'])).to.equal(moved);
  });

  it('the agent\'s push of its session branch reaches the remote; main, another branch and a tag do not', async () => {
    await w.ok(['fetch', '-q', 'origin']);
    await w.ok(['checkout', '-q', '-b', 'work', 'origin/main']);
    const mine = await w.commit({ 'agent.txt': 'agent\n' }, 'agent work');
    // The agent's credential opens only its own gateway: on the public listener its push is refused.
    const refused = await w.run(['push', authedUrl(serverUrl, session.env.SVC_CLI_TOKEN!), `HEAD:refs/heads/${session.id}`]);
    expect(refused.code).to.not.equal(0);
    expect(refused.stderr).to.contain('Authentication failed');
    expect(repo.tip(session.id)).to.not.equal(mine);
    // As the sandbox pushes: through its gateway.
    const agentUrl = authedUrl(sandboxRepoUrl, session.env.SVC_CLI_TOKEN!);
    const p = await w.run(['push', agentUrl, `HEAD:refs/heads/${session.id}`]);
    expect(p.code, p.stderr).to.equal(0);
    expect(repo.tip(session.id)).to.equal(mine);

    const mainBefore = repo.tip('main');
    const toMain = await w.run(['push', agentUrl, 'HEAD:refs/heads/main']);
    expect(toMain.code).to.not.equal(0);
    expect(toMain.stderr).to.contain(CR_ONLY_MESSAGE);
    const other = '00000000-0000-4000-8000-000000000000';
    const toOther = await w.run(['push', agentUrl, `HEAD:refs/heads/${other}`]);
    expect(toOther.code).to.not.equal(0);
    expect(toOther.stderr).to.contain(AGENT_BRANCH_MESSAGE);
    expect((await w.run(['push', agentUrl, 'HEAD:refs/tags/agent'])).code).to.not.equal(0);
    expect(repo.tip('main')).to.equal(mainBefore);
    expect(repo.tip(other)).to.equal(null);
    // A force-push of its own branch is refused before the remote is asked.
    await w.ok(['commit', '-q', '--amend', '-m', 'rewritten']);
    expect((await w.run(['push', '--force', agentUrl, `HEAD:refs/heads/${session.id}`])).code).to.not.equal(0);
    expect(repo.tip(session.id)).to.equal(mine);
  });

  it('a push the remote refuses is refused to the pusher, with the remote\'s words, and the relay\'s refs do not move', async () => {
    // The host protects a branch (its own hook); the server's rules let a person push it.
    const hook = path.join(repo.bare, 'hooks', 'pre-receive');
    writeFileSync(hook, '#!/bin/sh\nwhile read o n r; do [ "$r" = refs/heads/protected ] && { echo "protected by the host" >&2; exit 1; }; done\nexit 0\n');
    chmodSync(hook, 0o755);
    const person = authedUrl(serverUrl, srv.token);
    const p = await w.run(['push', person, 'HEAD:refs/heads/protected']);
    expect(p.code).to.not.equal(0);
    expect(p.stderr).to.contain("the project's repository refused this push").and.contain('protected by the host');
    expect(p.stderr).to.not.contain('s3cret');
    expect(repo.tip('protected')).to.equal(null);
    expect(await w.ok(['ls-remote', person, 'refs/heads/protected'])).to.equal('');
    // What the host accepts goes through, a person's topic branch included.
    const ok = await w.run(['push', person, 'HEAD:refs/heads/topic']);
    expect(ok.code, ok.stderr).to.equal(0);
    expect(repo.tip('topic')).to.equal(await w.ok(['rev-parse', 'HEAD']));
  });

  it('relay push arguments: atomic, leased, deletions as :ref, never an option from a ref', () => {
    const Z = '0'.repeat(40);
    const A = 'a'.repeat(40);
    expect(relayPushArgs([{ old: Z, next: A, ref: 'refs/heads/x' }, { old: A, next: Z, ref: 'refs/heads/y' }], 'https://h/r.git')).to.deep.equal([
      'push', '--porcelain', '--atomic', '--no-verify',
      '--force-with-lease=refs/heads/x:', `--force-with-lease=refs/heads/y:${A}`,
      '--end-of-options', 'https://h/r.git', `${A}:refs/heads/x`, ':refs/heads/y',
    ]);
  });
});
