import { expect } from 'chai';
import { execFile, execFileSync } from 'node:child_process';
import { promisify } from 'node:util';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { projectRoot } from '../../../lib/paths.js';
import { client, gatewayUrl } from '../../support/http.js';
import { fixtureRepo, type FixtureRepo } from '../../support/repo.js';
import { startTestServer, type TestServer } from '../../support/server.js';
import { killSandboxes, killSandboxesUnder, pidAlive, waitForStatus } from '../../support/sessions.js';
import { authedUrl } from '../../support/git-client.js';
import { skipUnlessCi } from '../../support/skip.js';
import { managedRepoPath } from '../../../infra/git/managed-repo.js';
import { AGENT_CANNOT_MERGE_MESSAGE } from '../../../services/tokens/agent-policy.js';
import { eventually, until } from '../../support/wait.js';

/**
 * End to end with the real `opencode serve` (the opencode-ai devDependency) on the
 * `process` provider, against a managed repository on the server's authenticated smart
 * HTTP: the sandbox clones and pushes only with agent-grade credentials its daemon fetched
 * just in time, and cannot merge its own CR (a person does).
 */
describe('sessions end to end with the real opencode runtime (e2e)', function () {
  this.timeout(240_000);
  const opencode = path.join(projectRoot, 'node_modules', '.bin', 'opencode');
  let srv: TestServer;
  let repo: FixtureRepo;

  before(async function () {
    if (!existsSync(opencode)) {
      skipUnlessCi(this, `${opencode} is not installed`);
    }
    repo = await fixtureRepo();
    srv = await startTestServer({ env: { SVC_AGENT_RUNTIME: opencode } });
  });
  after(async () => {
    if (srv) await killSandboxes(srv.db);
    await srv?.stop();
    if (srv) await killSandboxesUnder(srv.dataDir);
    await repo?.cleanup();
  });

  it('create → running → the agent answers through the proxy → push + cr open from inside → stop → restart → rm', async () => {
    const api = client(srv.url, srv.token);
    const p = await api.post('/v1/projects', { name: 'e2e', slug: 'e2e' });
    expect(p.status, JSON.stringify(p.body)).to.equal(201);
    // A person's first push fills the managed repository (async: the server is in this process).
    await promisify(execFile)('git', ['push', '-q', authedUrl(p.body.project.repo_url, srv.token), 'main'], { cwd: repo.work });
    const managed = managedRepoPath(path.join(srv.dataDir, 'repos'), p.body.project.project_id);
    const tip = (ref: string) => {
      try {
        return execFileSync('git', ['rev-parse', '--verify', '-q', `refs/heads/${ref}`], { cwd: managed, encoding: 'utf8' }).trim();
      } catch {
        return null;
      }
    };
    const sessions = '/v1/projects/e2e/sessions';

    const created = await api.post(sessions, { prompt: 'say hello' });
    expect(created.status).to.equal(201);
    expect(created.body.session.status).to.equal('provisioning');
    const id = created.body.session.session_id as string;
    const one = `${sessions}/${id}`;
    const s = await waitForStatus(api, one, ['running', 'failed'], 120_000);
    expect(s.status, JSON.stringify(s.error)).to.equal('running');

    // The daemon's health through the proxy: cloned on branch = session id at the base tip.
    const health = await api.get(`${one}/agent/svc/health`);
    expect(health.status).to.equal(200);
    expect(health.body).to.include({ daemon: 'ok', branch: id, commit: tip('main') });
    expect(health.body.repo).to.not.include('svc_pat_');

    // The agent answers through the server (503 while opencode boots).
    const agent = await eventually(
      async () => {
        const r = await api.get(`${one}/agent/global/health`);
        return r.status === 503 ? undefined : r;
      },
      'the agent to answer (not 503)',
      { timeoutMs: 90_000, maxIntervalMs: 200 },
    );
    expect(agent.status, JSON.stringify(agent.body)).to.equal(200);
    expect(agent.body.healthy).to.equal(true);
    // The first prompt opened an agent session at boot.
    const agentSessions = await eventually(
      async () => {
        const body = (await api.get(`${one}/agent/session`)).body;
        return Array.isArray(body) && body.length > 0 ? body : undefined;
      },
      'the agent session opened at boot',
      { timeoutMs: 30_000, maxIntervalMs: 200 },
    );
    expect(agentSessions).to.be.an('array').that.is.not.empty;

    // Inside the sandbox, with only the injected environment (the entrypoint's own).
    const row = (await srv.db.db.one<{ ref: string }>({ text: "SELECT ref FROM session_sandboxes WHERE session_id = $1 AND state = 'active'", values: [id] }))!;
    const env = Object.fromEntries(
      readFileSync(`/proc/${row.ref}/environ`, 'utf8').split('\0').filter(Boolean).map((kv) => [kv.slice(0, kv.indexOf('=')), kv.slice(kv.indexOf('=') + 1)]),
    );
    expect(Object.keys(env).filter((k) => /PASSWORD|GIT_TOKEN|DATABASE_URL|SECRET_KEY/.test(k))).to.deep.equal([]);
    expect(JSON.stringify(env)).to.not.include(srv.token);
    const ws = env.SVC_WORKSPACE!;
    // Async: the git server and the API answering these commands live in this process.
    const run = promisify(execFile);
    const inSandbox = async (cmd: string, args: string[]) => (await run(cmd, args, { cwd: ws, env, encoding: 'utf8', timeout: 60_000 })).stdout;
    writeFileSync(path.join(ws, 'agent-work.txt'), 'made in the sandbox\n');
    await inSandbox('git', ['add', 'agent-work.txt']);
    await inSandbox('git', ['-c', 'user.name=agent', '-c', 'user.email=agent@example.test', 'commit', '-q', '-m', 'agent work']);
    await inSandbox('git', ['push', '-q', 'origin', 'HEAD']);
    // It authenticated with fetched clone credentials, all agent-grade; none is in .git/config.
    const creds = await srv.db.db.rows<{ grade: string }>({ text: "SELECT grade FROM tokens WHERE name = 'clone-credential'", values: [] });
    expect(creds.length).to.be.greaterThan(0);
    expect(creds.every((c) => c.grade === 'agent')).to.equal(true);
    expect(readFileSync(path.join(ws, '.git', 'config'), 'utf8')).to.not.include('svc_pat_');
    const pushed = (await inSandbox('git', ['rev-parse', 'HEAD'])).trim();
    expect(tip(id)).to.equal(pushed);
    const cr = JSON.parse(await inSandbox('svc', ['cr', 'open', '--title', 'x', '--json']));
    expect(cr).to.include({ title: 'x', head_ref: id, base_ref: 'main', origin_session_id: id, head_commit_sha: pushed });

    // The agent cannot merge it (exit 1, the message on stderr); the user merges it: only so
    // does the agent's work reach main.
    const selfMerge = await inSandbox('svc', ['cr', 'merge', String(cr.number)]).then(
      () => null,
      (err: { code?: number; stderr?: string }) => err,
    );
    expect(selfMerge?.code).to.equal(1);
    expect(selfMerge?.stderr).to.contain(AGENT_CANNOT_MERGE_MESSAGE);
    expect(tip('main')).to.not.equal(pushed);
    const merged = await api.post(`/v1/projects/e2e/change-requests/${cr.number}/merge`, {});
    expect(merged.status, JSON.stringify(merged.body)).to.equal(200);
    expect(tip('main')).to.equal(pushed);

    // Stop: the sandbox's credentials die at once.
    const oldSvc = env.SVC_TOKEN!;
    const oldCli = env.SVC_CLI_TOKEN!;
    const credUrl = `/v1/projects/${s.project_id}/git/clone-credential`;
    // (sandbox credentials work only through their sandbox's gateway socket)
    expect((await client(gatewayUrl(srv.dataDir, s.sandbox.sandbox_id), oldSvc).get(credUrl)).status).to.equal(200);
    expect((await client(srv.url, oldSvc).get(credUrl)).status).to.equal(401);
    expect((await api.post(`${one}/stop`, {})).body.session.status).to.equal('stopped');
    const revoked = await srv.db.db.one<{ revoked_at: Date | null }>({ text: 'SELECT revoked_at FROM sandbox_credentials WHERE sandbox_id = $1', values: [s.sandbox.sandbox_id] });
    expect(revoked?.revoked_at, 'the stopped sandbox key is revoked').to.be.instanceOf(Date);
    expect((await client(srv.url, oldSvc).get(credUrl)).status).to.equal(401);
    expect((await client(srv.url, oldCli).get(`/v1/projects/${s.project_id}/change-requests`)).status).to.equal(401);

    // Restart: new sandbox, new tokens; the old ones stay dead.
    expect((await api.post(`${one}/restart`, {})).status).to.equal(200);
    const again = await waitForStatus(api, one, ['running', 'failed'], 120_000);
    expect(again.status, JSON.stringify(again.error)).to.equal('running');
    const health2 = await api.get(`${one}/agent/svc/health`);
    expect(health2.body).to.include({ branch: id, commit: pushed });
    const row2 = (await srv.db.db.one<{ ref: string }>({ text: "SELECT ref FROM session_sandboxes WHERE session_id = $1 AND state = 'active'", values: [id] }))!;
    const env2 = readFileSync(`/proc/${row2.ref}/environ`, 'utf8');
    expect(env2).to.not.include(oldSvc);
    expect(env2).to.not.include(oldCli);
    expect((await client(srv.url, oldSvc).get(credUrl)).status).to.equal(401);
    expect((await client(srv.url, oldCli).get(`/v1/projects/${s.project_id}`)).status).to.equal(401);

    // Remove: the sandbox goes, the branch stays, the CR forgets its origin.
    expect((await api.call('DELETE', one)).status).to.equal(204);
    await until(() => !pidAlive(Number(row2.ref)), 'the sandbox process to exit', { timeoutMs: 15_000, maxIntervalMs: 100 }).catch(() => undefined);
    expect(pidAlive(Number(row2.ref))).to.equal(false);
    expect(existsSync(path.join(srv.dataDir, 'sandboxes'))).to.equal(true);
    await until(() => !existsSync(path.dirname(ws)), 'the workspace removed', { timeoutMs: 15_000, maxIntervalMs: 100 }).catch(() => undefined);
    expect(existsSync(path.dirname(ws)), 'workspace removed').to.equal(false);
    expect(tip(id)).to.equal(pushed);
    expect((await api.get(`/v1/projects/e2e/change-requests/${cr.number}`)).body.change_request.origin_session_id).to.equal(null);
  });
});
