import { execFileSync } from 'node:child_process';
import { existsSync, readlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { startTestServer, type TestServer } from '../../support/server.js';
import { client } from '../../support/http.js';
import { authedUrl, workDir } from '../../support/git-client.js';
import { agentReady, waitForStatus } from '../../support/sessions.js';
import { skipUnlessCi } from '../../support/skip.js';
import { hostListeningPorts, PROBE_PORTS_JS } from './support.js';
import { fixtureRepo, type FixtureRepo } from '../../support/repo.js';

/**
 * The sandbox boundary, with the real server and two accounts, each
 * with a session on a managed repository, under one provider. Commands run inside a
 * sandbox as the agent's would (the exec runtime, driven through the server's agent proxy).
 * `setup` answers the server's extra environment (the provider, the runtime), or a reason to skip.
 */
export function isolationSuite(provider: 'bwrap' | 'docker', setup: () => Promise<{ env: Record<string, string> } | { skip: string }>): void {
describe(`isolation: two tenants under the ${provider} provider`, function () {
  this.timeout(180_000);
  let srv: TestServer;
  let fileRepo: FixtureRepo | undefined;
  const tenants: { token: string; project: string; session: string; sandbox: string; env: Record<string, string> }[] = [];

  const exec = async (i: number, argv: string[]) => {
    const t = tenants[i]!;
    const r = await client(srv.url, t.token).post(`/v1/projects/${t.project}/sessions/${t.session}/agent/exec`, { argv });
    expect(r.status, JSON.stringify(r.body)).to.equal(200);
    return r.body as { code: number; stdout: string; stderr: string };
  };

  before(async function () {
    const got = await setup();
    if ('skip' in got) return skipUnlessCi(this, got.skip);
    srv = await startTestServer({ env: { SVC_SANDBOX_PROVIDER: provider, ...got.env } });
    const other = await srv.newUser('mallory@example.com');
    for (const [i, token] of [srv.token, other.token].entries()) {
      const api = client(srv.url, token);
      const slug = `iso-${i}`;
      const created = await api.post('/v1/projects', { name: slug, slug });
      expect(created.status, JSON.stringify(created.body)).to.equal(201);
      const w = await workDir();
      await w.ok(['init', '-q', '-b', 'main']);
      await w.commit({ 'README.md': `tenant ${i}\n` }, 'first');
      await w.ok(['push', '-q', authedUrl(created.body.project.repo_url, token), 'main']);
      await w.cleanup();
      const s = await api.post(`/v1/projects/${slug}/sessions`, {});
      expect(s.status, JSON.stringify(s.body)).to.equal(201);
      const running = await waitForStatus(api, `/v1/projects/${slug}/sessions/${s.body.session.session_id}`, ['running', 'failed']);
      expect(running.status, JSON.stringify(running.error)).to.equal('running');
      tenants.push({ token, project: slug, session: running.session_id, sandbox: running.sandbox.sandbox_id, env: {} });
      const env = await agentReady(client(srv.url, token), `/v1/projects/${slug}/sessions/${running.session_id}/agent/env`);
      tenants[i]!.env = env.body.env;
    }
    // Mallory's second project: a `file://` repository (tenant 2), whose own hook would
    // leave a mark if anything ran it (an earlier attack planted one from inside).
    fileRepo = await fixtureRepo();
    writeFileSync(path.join(fileRepo.bare, 'hooks', 'reference-transaction'), `#!/bin/sh\ntouch '${path.join(path.dirname(fileRepo.bare), 'hook-ran')}'\n`, { mode: 0o755 });
    const api = client(srv.url, other.token);
    const created = await api.post('/v1/projects', { name: 'iso-file', slug: 'iso-file', repo_url: fileRepo.url });
    expect(created.status, JSON.stringify(created.body)).to.equal(201);
    const s = await api.post('/v1/projects/iso-file/sessions', {});
    expect(s.status, JSON.stringify(s.body)).to.equal(201);
    const running = await waitForStatus(api, `/v1/projects/iso-file/sessions/${s.body.session.session_id}`, ['running', 'failed']);
    expect(running.status, JSON.stringify(running.error)).to.equal('running');
    const env = await agentReady(api, `/v1/projects/iso-file/sessions/${running.session_id}/agent/env`);
    tenants.push({ token: other.token, project: 'iso-file', session: running.session_id, sandbox: running.sandbox.sandbox_id, env: env.body.env });
  });
  after(async () => {
    await srv?.stop();
    await fileRepo?.cleanup();
  });

  it('from inside a sandbox, no port listening on the host answers (the server, PostgreSQL, anything)', async () => {
    const ports = hostListeningPorts();
    expect(ports, 'the server itself listens on the host').to.include(new URL(srv.url).port === '' ? 80 : Number(new URL(srv.url).port));
    const r = await exec(1, ['node', '-e', PROBE_PORTS_JS, ports.join(',')]);
    expect(r.code, r.stderr).to.equal(0);
    const inside = JSON.parse(r.stdout) as { answered: number[]; own: number[]; netns: string };
    expect(inside.answered, 'ports that answered from inside the sandbox').to.deep.equal([]);
    // Its own network namespace, whose only listeners are its own daemon, runtime and gateway.
    expect(inside.netns).to.not.equal(readlinkSync('/proc/self/ns/net'));
    expect(inside.own).to.include.members([8000, 4080]);
    // The same probe on the host reaches the server: the probe itself works.
    const host = JSON.parse(execFileSync(process.execPath, ['-e', PROBE_PORTS_JS, new URL(srv.url).port], { encoding: 'utf8', env: { ...process.env, PROBE_INCLUDE_OWN: '1' } }));
    expect(host.answered).to.deep.equal([Number(new URL(srv.url).port)]);
  });

  it("the sandbox reaches the server only through its own gateway, with its own credentials; another tenant's token is refused there", async () => {
    const mallory = tenants[1]!;
    expect(mallory.env.SVC_API_URL).to.equal('http://127.0.0.1:4080/v1');
    const call = (token: string) =>
      exec(1, ['node', '-e', `fetch(process.argv[1] + '/projects', { headers: { authorization: 'Bearer ' + process.argv[2] } }).then((r) => console.log(r.status))`, mallory.env.SVC_API_URL!, token]);
    expect((await call(mallory.env.SVC_CLI_TOKEN!)).stdout.trim()).to.equal('200');
    // Alice's own tokens, had they leaked: not through Mallory's gateway.
    expect((await call(tenants[0]!.env.SVC_CLI_TOKEN!)).stdout.trim()).to.equal('401');
    expect((await call(tenants[0]!.token)).stdout.trim()).to.equal('401');
    // And Mallory's sandbox token is refused on the public listener.
    expect((await client(srv.url, mallory.env.SVC_CLI_TOKEN!).get('/v1/projects')).status).to.equal(401);
  });

  it("the other tenant's runtime cannot be driven through the sandbox or its preview route", async () => {
    const [alice, mallory] = [tenants[0]!, tenants[1]!];
    // Alice's runtime and daemon listen on ports 4096 and 8000 of HER sandbox's loopback;
    // the same numbers in Mallory's sandbox are Mallory's own (or nothing).
    const inside = await exec(1, ['node', '-e', PROBE_PORTS_JS, '4096,8000']);
    expect(inside.code, inside.stderr).to.equal(0);
    for (const port of [4096, 8000]) {
      const r = await client(srv.url, mallory.token).get(`/v1/projects/${mallory.project}/sessions/${mallory.session}/preview/${port}/env`);
      expect(JSON.stringify(r.body ?? '')).to.not.include(alice.env.SVC_SESSION_ID!);
      expect(JSON.stringify(r.body ?? '')).to.not.include(alice.env.SVC_CLI_TOKEN!);
    }
    const env = await exec(1, ['node', '-e', `fetch('http://127.0.0.1:4096/env').then((r) => r.text()).then(console.log, () => console.log('refused'))`]);
    expect(env.stdout).to.not.include(alice.env.SVC_SESSION_ID!);
  });

  it('/proc/self/mountinfo lists no repository path, no data dir and no other sandbox', async () => {
    const r = await exec(1, ['cat', '/proc/self/mountinfo']);
    expect(r.code).to.equal(0);
    expect(r.stdout).to.not.include(path.join(srv.dataDir, 'repos'));
    expect(r.stdout).to.not.include(tenants[0]!.sandbox);
    expect(r.stdout).to.include('/run/svc/gw'); // what IS there: its gateway, read-only
    const gw = r.stdout.split('\n').find((l) => l.split(' ')[4] === '/run/svc/gw')!;
    expect(gw.split(' ')[5]).to.match(/(^|,)ro(,|$)/);
  });

  it('a file:// project: no repository path is mounted; clone and push go through the gateway, checked, and run none of its hooks', async () => {
    const repo = fileRepo!;
    const r = await exec(2, ['cat', '/proc/self/mountinfo']);
    expect(r.code).to.equal(0);
    expect(r.stdout).to.not.include(path.dirname(repo.bare));
    expect((await exec(2, ['sh', '-c', `test -e '${repo.bare}'`])).code, 'the repository path inside').to.not.equal(0);
    const origin = await exec(2, ['git', '-C', '/workspace', 'remote', 'get-url', 'origin']);
    expect(origin.stdout.trim()).to.match(/^http:\/\/127\.0\.0\.1:4080\/git\/[^/]+\.git$/);
    const push = await exec(2, [
      'sh',
      '-c',
      'cd /workspace && git -c user.name=agent -c user.email=agent@example.com commit -q --allow-empty -m from-sandbox && git push -q origin HEAD && git rev-parse --abbrev-ref HEAD && git rev-parse HEAD',
    ]);
    expect(push.code, push.stderr).to.equal(0);
    const [branch, sha] = push.stdout.trim().split('\n');
    expect(repo.tip(branch!), 'the session branch, in the file:// repository').to.equal(sha);
    // The server's pre-receive checked it as an agent's: main is not the agent's to move.
    const main = repo.tip('main');
    const refused = await exec(2, ['sh', '-c', 'cd /workspace && git push -q origin HEAD:main']);
    expect(refused.code).to.not.equal(0);
    expect(repo.tip('main')).to.equal(main);
    expect(existsSync(path.join(path.dirname(repo.bare), 'hook-ran')), "the repository's own hook ran").to.equal(false);
  });

  it("a sandbox cannot redirect the server's socket by replacing files in its directories", async () => {
    const [alice, mallory] = [tenants[0]!, tenants[1]!];
    const aliceSocket = path.join(srv.dataDir, 'sandboxes', alice.sandbox, 'daemon', 'daemon.sock');
    // The gateway directory is read-only inside.
    const ro = await exec(1, ['sh', '-c', 'ln -sf /x /run/svc/gw/gateway.sock']);
    expect(ro.code).to.not.equal(0);
    // The daemon's socket is Mallory's to replace: a link to Alice's daemon socket (its host path).
    const ln = await exec(1, ['sh', '-c', `rm -f /run/svc/daemon/daemon.sock && ln -s '${aliceSocket}' /run/svc/daemon/daemon.sock && ls -l /run/svc/daemon`]);
    expect(ln.code, ln.stderr).to.equal(0);
    const r = await client(srv.url, mallory.token).get(`/v1/projects/${mallory.project}/sessions/${mallory.session}/agent/env`);
    expect(r.status).to.equal(502);
    expect(JSON.stringify(r.body)).to.not.include(alice.env.SVC_SESSION_ID!);
    // Alice's sandbox is untouched.
    const a = await client(srv.url, alice.token).get(`/v1/projects/${alice.project}/sessions/${alice.session}/agent/env`);
    expect(a.status).to.equal(200);
    expect(a.body.env.SVC_SESSION_ID).to.equal(alice.env.SVC_SESSION_ID);
  });
});
}
