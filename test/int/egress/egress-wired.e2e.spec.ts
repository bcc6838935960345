import { execFileSync } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { probeBwrap } from '../../../infra/sandbox/bwrap.js';
import { readStream } from '../../../infra/event-store.js';
import { sessionStreamId } from '../../../domain/session/index.js';
import { startTestServer, type TestServer } from '../../support/server.js';
import { client } from '../../support/http.js';
import { authedUrl, workDir } from '../../support/git-client.js';
import { agentReady, waitForStatus } from '../../support/sessions.js';
import { skipUnlessCi } from '../../support/skip.js';
import { until } from '../../support/wait.js';
import { execRuntimeBin } from '../../sandbox/support/daemon-client.js';
import { countingServer, type CountingServer } from './support.js';

/**
 * Run with node inside a sandbox: one request through the proxy that HTTP_PROXY names
 * (absolute-form, argv[1] the target URL, extra headers as JSON in argv[2]) and one
 * CONNECT to the same host:port; prints `{ get: {status, refused, body}, connect: {status, body} }`.
 */
const VIA_PROXY_JS = `
const http = require('node:http');
const proxy = new URL(process.env.HTTP_PROXY);
const target = new URL(process.argv[1]);
const headers = JSON.parse(process.argv[2] || '{}');
const get = () => new Promise((resolve) => {
  const r = http.request({ host: proxy.hostname, port: proxy.port, path: target.href, headers: { host: target.host, ...headers } }, (res) => {
    let body = ''; res.setEncoding('utf8'); res.on('data', (d) => (body += d));
    res.on('end', () => resolve({ status: res.statusCode, refused: res.headers['x-svc-egress-refused'] ?? null, body }));
  });
  r.on('error', (e) => resolve({ error: e.code || e.message }));
  r.end();
});
const connect = () => new Promise((resolve) => {
  const r = http.request({ host: proxy.hostname, port: proxy.port, method: 'CONNECT', path: target.host, headers });
  // Node reports every answer to CONNECT here, a refusal too; its body follows on the socket.
  r.on('connect', (res, socket, head) => {
    if (res.statusCode === 200) { socket.destroy(); return resolve({ status: 200 }); }
    let body = head.toString('utf8'); socket.setEncoding('utf8'); socket.on('data', (d) => (body += d));
    socket.on('end', () => resolve({ status: res.statusCode, body })); socket.on('error', () => resolve({ status: res.statusCode, body }));
  });
  r.on('response', (res) => { let body = ''; res.on('data', (d) => (body += d)); res.on('end', () => resolve({ status: res.statusCode, body })); });
  r.on('error', (e) => resolve({ error: e.code || e.message }));
  r.end();
});
get().then(async (g) => console.log(JSON.stringify({ get: g, connect: await connect() })));
`;

/** Run with node inside a sandbox: a direct TCP connect to 127.0.0.1:argv[1]; prints `connected` or the error code. */
const DIRECT_JS = `
const s = require('node:net').connect({ host: '127.0.0.1', port: Number(process.argv[1]) });
s.once('connect', () => { console.log('connected'); s.destroy(); });
s.once('error', (e) => console.log(e.code || e.message));
s.setTimeout(3000, () => { console.log('timeout'); s.destroy(); });
`;

/**
 * The egress proxy wired into the sandbox gateway, end to end under bwrap:
 * the sandbox's HTTP_PROXY (127.0.0.1:3128 of its own loopback, forwarded by svc-entrypoint
 * to the server's gw/egress.sock) reaches the server's proxy, which decides with the
 * sandbox's identity known from the socket that accepted the connection. The policy
 * refuses loopback, so the host's test server stands for "a target the proxy refuses"; no
 * test here makes a connection leave the machine.
 */
describe('egress: the proxy on the sandbox gateway (bwrap)', function () {
  this.timeout(180_000);
  let srv: TestServer;
  let target: CountingServer;
  const tenants: { token: string; project: string; session: string; sandbox: string; env: Record<string, string> }[] = [];

  const exec = async (i: number, argv: string[]) => {
    const t = tenants[i]!;
    const r = await client(srv.url, t.token).post(`/v1/projects/${t.project}/sessions/${t.session}/agent/exec`, { argv });
    expect(r.status, JSON.stringify(r.body)).to.equal(200);
    return r.body as { code: number; stdout: string; stderr: string };
  };
  const refusals = async (i: number) =>
    (await readStream(srv.db.db, sessionStreamId(tenants[i]!.session))).filter((e) => e.type === 'SessionEgressRefused').map((e) => e.data as { sandbox_id: string; host: string; port: number; reason: string });

  before(async function () {
    const probe = probeBwrap();
    if (!probe.ok) return skipUnlessCi(this, `bubblewrap cannot run here: ${probe.reason}`);
    target = await countingServer('127.0.0.1', 'host-service');
    srv = await startTestServer({ env: { SVC_SANDBOX_PROVIDER: 'bwrap', SVC_AGENT_RUNTIME: execRuntimeBin } });
    const other = await srv.newUser('mallory@example.com');
    for (const [i, token] of [srv.token, other.token].entries()) {
      const api = client(srv.url, token);
      const slug = `egress-${i}`;
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
      const env = await agentReady(api, `/v1/projects/${slug}/sessions/${running.session_id}/agent/env`);
      tenants.push({ token, project: slug, session: running.session_id, sandbox: running.sandbox.sandbox_id, env: env.body.env });
    }
  });
  after(async () => {
    await srv?.stop();
    await target?.close();
  });

  it('the sandbox is given the proxy on its loopback, and the server listens on gw/egress.sock beside gw/gateway.sock', () => {
    const env = tenants[1]!.env;
    expect(env).to.include({ HTTP_PROXY: 'http://127.0.0.1:3128', HTTPS_PROXY: 'http://127.0.0.1:3128', http_proxy: 'http://127.0.0.1:3128', https_proxy: 'http://127.0.0.1:3128', NO_PROXY: '127.0.0.1,localhost' });
    const gw = path.join(srv.dataDir, 'sandboxes', tenants[1]!.sandbox, 'gw');
    expect(existsSync(path.join(gw, 'gateway.sock'))).to.equal(true);
    expect(statSync(path.join(gw, 'egress.sock')).isSocket()).to.equal(true);
  });

  it('a request through HTTP_PROXY to a host port is refused by the proxy (403, its own body), recorded in the session history; the host service sees nothing', async () => {
    const url = `http://127.0.0.1:${target.port}/`;
    const r = await exec(1, ['node', '-e', VIA_PROXY_JS, url]);
    expect(r.code, r.stderr).to.equal(0);
    const out = JSON.parse(r.stdout) as { get: { status: number; refused: string | null; body: string }; connect: { status: number; body?: string } };
    // The proxy answered: its refusal header and its one-line reason, not the host service's body.
    expect(out.get.status, JSON.stringify(out)).to.equal(403);
    expect(out.get.refused).to.equal('ip literal');
    expect(out.get.body).to.match(/^egress refused: 127\.0\.0\.1 is an IP address/);
    expect(out.connect.status, JSON.stringify(out)).to.equal(403);
    expect(out.connect.body).to.match(/^egress refused: /);
    expect(target.connections, 'connections that reached the host service').to.equal(0);
    await until(async () => (await refusals(1)).some((e) => e.port === target.port), 'the refusal in the session history');
    const [e] = (await refusals(1)).filter((x) => x.port === target.port);
    expect(e).to.include({ sandbox_id: tenants[1]!.sandbox, host: '127.0.0.1', port: target.port });
    expect(e!.reason).to.match(/is an IP address/);
  });

  it('a direct connection to the same host port fails: the sandbox has no route but the proxy', async () => {
    const r = await exec(1, ['node', '-e', DIRECT_JS, String(target.port)]);
    expect(r.code, r.stderr).to.equal(0);
    expect(r.stdout.trim()).to.be.oneOf(['ECONNREFUSED', 'ENETUNREACH', 'timeout']);
    expect(target.connections).to.equal(0);
    // The same probe on the host connects: the probe itself works.
    expect(execFileSync(process.execPath, ['-e', DIRECT_JS, String(target.port)], { encoding: 'utf8' }).trim()).to.equal('connected');
    await until(() => target.connections === 1, 'the host probe reaching the host service');
  });

  it("the identity is the socket's: headers naming another sandbox change nothing, and the other tenant's history stays empty", async () => {
    const [alice, mallory] = [tenants[0]!, tenants[1]!];
    const before = (await refusals(0)).length;
    const claim = JSON.stringify({ 'proxy-authorization': `Bearer ${alice.env.SVC_CLI_TOKEN}`, 'x-svc-sandbox-id': alice.sandbox, 'x-svc-project-id': alice.project });
    // Another host (one refusal per host per minute is recorded), refused before any lookup.
    const r = await exec(1, ['node', '-e', VIA_PROXY_JS, `http://127.0.0.2:${target.port}/`, claim]);
    expect(r.code, r.stderr).to.equal(0);
    const out = JSON.parse(r.stdout) as { get: { status: number; refused: string | null } };
    expect(out.get.status, JSON.stringify(out)).to.equal(403);
    await until(async () => (await refusals(1)).some((e) => e.host === '127.0.0.2'), "the refusal in Mallory's history");
    expect((await refusals(1)).find((e) => e.host === '127.0.0.2')!.sandbox_id).to.equal(mallory.sandbox);
    expect(await refusals(0)).to.have.length(before);
  });

  it('the egress socket cannot be replaced from inside (the gateway directory is read-only)', async () => {
    const r = await exec(1, ['sh', '-c', 'ln -sf /x /run/svc/gw/egress.sock || rm -f /run/svc/gw/egress.sock']);
    expect(r.code).to.not.equal(0);
    const again = await exec(1, ['node', '-e', VIA_PROXY_JS, `http://127.0.0.1:${target.port}/`]);
    expect((JSON.parse(again.stdout) as { get: { status: number } }).get.status).to.equal(403);
  });
});
