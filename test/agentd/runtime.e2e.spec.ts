import { expect } from 'chai';
import WebSocket from 'ws';
import { entrypointBin, eventually, startDaemon, type DaemonHandle } from './support/harness.js';

/** The runtime's lifecycle under the daemon, and PID 1 (`svc-entrypoint`) around it. */
describe('svc-agent runtime supervision (e2e)', function () {
  this.timeout(60_000);
  const started: DaemonHandle[] = [];
  const start = async (...args: Parameters<typeof startDaemon>) => {
    const d = await startDaemon(...args);
    started.push(d);
    return d;
  };
  afterEach(async () => {
    await Promise.all(started.splice(0).map((d) => d.stop()));
  });

  const runtimePid = async (d: DaemonHandle) =>
    ((await (await fetch(`${d.url}/fake/state`, { headers: { 'x-svc-user-context': d.sign() } })).json()) as { pid: number }).pid;

  it('answers 503 on runtime paths while the runtime boots, with health saying "starting"', async () => {
    const d = await start({ env: { FAKE_RUNTIME_BOOT_DELAY_MS: '1500' } });
    const h = await d.health();
    expect(h.agent).to.equal('starting');
    const r = await fetch(`${d.url}/global/health`, { headers: { 'x-svc-user-context': d.sign() } });
    expect(r.status).to.equal(503);
    expect(r.headers.get('retry-after')).to.equal('1');
    expect(await r.json()).to.deep.include({ error: 'Unavailable' });
    const ws = await new Promise<number>((resolve) => {
      const s = new WebSocket(`ws://127.0.0.1:${d.port}/ws`, { headers: { 'x-svc-user-context': d.sign() } });
      s.on('unexpected-response', (_q, res) => resolve(res.statusCode ?? 0));
      s.on('error', () => undefined);
    });
    expect(ws).to.equal(503);
    const prompt = await d.control('/svc/prompt', { text: 'too early' });
    expect(prompt.status).to.equal(503);
    // Still unauthenticated requests are refused before anything else.
    expect((await fetch(`${d.url}/global/health`)).status).to.equal(401);
    await d.waitForAgent('running');
    expect((await fetch(`${d.url}/global/health`, { headers: { 'x-svc-user-context': d.sign() } })).status).to.equal(200);
  });

  it('restarts a runtime that crashes, reporting "exited" in between', async () => {
    const d = await start({ env: { SVC_AGENT_RESTART_BACKOFF_MS: '800' } });
    await d.waitForAgent('running');
    const first = await runtimePid(d);
    const crash = await fetch(`${d.url}/fake/crash`, { method: 'POST', headers: { 'x-svc-user-context': d.sign() } });
    expect(crash.status).to.equal(200);
    await d.waitForAgent('exited', 5_000);
    const during = await fetch(`${d.url}/global/health`, { headers: { 'x-svc-user-context': d.sign() } });
    expect(during.status).to.equal(503);
    await d.waitForAgent('running');
    const second = await runtimePid(d);
    expect(second).to.not.equal(first);
    expect(d.output()).to.match(/agent runtime exited; restarting/);
    // Its output lands in the daemon's log.
    expect(d.output()).to.match(/"runtime":"stdout".*fake runtime listening/);
  });

  it('keeps retrying a runtime that cannot be started, and stays up itself', async () => {
    const d = await start({ env: { SVC_AGENT_RUNTIME: '/nonexistent/opencode' } });
    await eventually(async () => (d.output().match(/agent runtime exited; restarting/g) ?? []).length >= 2, 10_000, 'two restarts');
    expect((await d.health()).agent).to.not.equal('running');
    expect(d.child.exitCode).to.equal(null);
  });

  it('stops the runtime process group on SIGTERM and exits 0', async () => {
    const d = await start({ env: { FAKE_RUNTIME_IGNORE_TERM: '1', SVC_AGENT_STOP_GRACE_MS: '300' } });
    await d.waitForAgent('running');
    const pid = await runtimePid(d);
    const code = await d.stop();
    expect(code).to.equal(0);
    expect(() => process.kill(pid, 0)).to.throw();
  });

  it('exits 2 with a clear message on an invalid environment', async () => {
    let err: Error | undefined;
    try {
      await start({ env: { SVC_TOKEN: 'short' } });
    } catch (e) {
      err = e as Error;
    }
    expect(err?.message).to.match(/daemon exited early \(2\)/);
    expect(err?.message).to.match(/SVC_TOKEN/);
  });
});

describe('svc-entrypoint (e2e)', function () {
  this.timeout(60_000);

  it('runs the daemon as its child, forwards SIGTERM, and exits with its code', async () => {
    const d = await startDaemon({ bin: entrypointBin });
    try {
      await d.waitForAgent('running');
      expect((await d.health()).daemon).to.equal('ok');
    } finally {
      const code = await d.stop();
      expect(code).to.equal(0);
    }
    expect(d.output()).to.match(/forwarding signal to daemon.*SIGTERM/);
    expect(d.output()).to.match(/"msg":"daemon exited","code":0/);
  });

  it("passes on the daemon's failure exit code", async () => {
    let err: Error | undefined;
    try {
      await startDaemon({ bin: entrypointBin, env: { SVC_TOKEN: '' } });
    } catch (e) {
      err = e as Error;
    }
    expect(err?.message).to.match(/daemon exited early \(2\)/);
  });

  it('exits 127 when the daemon cannot be started', async () => {
    let err: Error | undefined;
    try {
      await startDaemon({ bin: entrypointBin, env: { SVC_ENTRYPOINT_DAEMON: '/nonexistent/svc-agent' } });
    } catch (e) {
      err = e as Error;
    }
    expect(err?.message).to.match(/daemon exited early \(127\)/);
  });
});
