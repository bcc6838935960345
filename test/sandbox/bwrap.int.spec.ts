import { spawnSync } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, readFileSync, realpathSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { createBwrapProvider, probeBwrap } from '../../infra/sandbox/bwrap.js';
import { procStat } from '../../lib/proc.js';
import type { SandboxHandle, SandboxProvider, SandboxSpec } from '../../infra/sandbox/port.js';
import { distRoot, makeRemote, tempDir } from '../agentd/support/harness.js';
import { startFakeApi, startGitHttpServer, type FakeApi, type GitHttpServer } from '../agentd/support/git-http-server.js';
import { envIn, execIn, execRuntimeBin, pidsInNamespace, waitForRunning } from './support/daemon-client.js';
import { sandboxSpec } from './support/sandbox-spec.js';
import { startTestGateway, type TestGateway } from './support/test-gateway.js';
import { skipUnlessCi } from '../support/skip.js';

/**
 * The bwrap provider with the real daemon (svc-entrypoint -> svc-agent) and a runtime
 * that runs commands inside the sandbox. The sandbox root lives INSIDE a stand-in for the
 * server's data dir, next to a secret file the sandbox must not see.
 */
describe('bwrap sandbox provider (real bubblewrap)', function () {
  this.timeout(90_000);
  const probe = probeBwrap();
  let t: ReturnType<typeof tempDir>;
  let dataDir: string;
  let root: string;
  let provider: SandboxProvider;
  let remote: ReturnType<typeof makeRemote>;
  let gitServer: GitHttpServer;
  let api: FakeApi;
  let gw: TestGateway;
  const handles: SandboxHandle[] = [];
  const token = randomBytes(24).toString('hex');
  const username = 'x-access-token';
  const password = `clonepass-${randomBytes(8).toString('hex')}`;

  const spec = (extra: Record<string, string> = {}): SandboxSpec =>
    sandboxSpec({ token, branch: remote.branch, repoUrl: `${gw.url}/remote.git`, apiUrl: `${gw.url}/v1`, runtime: execRuntimeBin, label: 'bwrap', extra });
  const logOf = (h: SandboxHandle) => {
    const f = path.join(root, h.sandboxId, 'sandbox.log');
    return existsSync(f) ? `\n--- sandbox.log ---\n${readFileSync(f, 'utf8').slice(-3000)}` : '';
  };

  before(async function () {
    if (!probe.ok) {
      skipUnlessCi(this, `the bwrap provider tests: ${probe.reason}`);
    }
    t = tempDir('svc-bwrap-');
    dataDir = path.join(t.dir, 'data');
    root = path.join(dataDir, 'sandboxes');
    mkdirSync(root, { recursive: true });
    writeFileSync(path.join(dataDir, 'secret-key'), 'server secret');
    remote = makeRemote(t.dir, { branch: randomUUID() });
    gitServer = await startGitHttpServer(t.dir, username, password);
    api = await startFakeApi(token, { username, password });
    gw = await startTestGateway({ api: api.url, git: gitServer.url });
    provider = createBwrapProvider({ root, stopGraceMs: 5_000, gateway: gw });
  });

  after(async () => {
    for (const h of handles) await provider?.destroy(h).catch(() => undefined);
    await gitServer?.close();
    await api?.close();
    await gw?.stop();
    t?.cleanup();
  });

  describe('one sandbox', () => {
    let h: SandboxHandle;
    before(async () => {
      process.env.SVC_TEST_SERVER_ONLY = 'server-env-must-not-leak';
      try {
        h = await provider.create(spec());
      } finally {
        delete process.env.SVC_TEST_SERVER_ONLY;
      }
      handles.push(h);
    });

    it('boots the daemon: /svc/health answers on its socket, the repo is cloned over HTTP through the gateway on the session branch', async () => {
      expect(h.provider).to.equal('bwrap');
      expect(h.url).to.equal(`unix:${path.join(root, h.sandboxId, 'daemon', 'daemon.sock')}`);
      expect(h.ref).to.match(/^\d+:\d+$/);
      const health = await waitForRunning(h.url, 30_000, () => logOf(h));
      expect(health.daemon).to.equal('ok');
      expect(health.branch).to.equal(remote.branch);
      expect(health.commit, logOf(h)).to.equal(remote.tip(remote.branch));
      expect(await provider.inspect(h)).to.equal('running');
      // The clone landed in the sandbox's workspace dir on the host.
      expect(existsSync(path.join(root, h.sandboxId, 'workspace', 'svc.toml'))).to.equal(true);
    });

    it('gives the runtime the injected environment, its own ports and workspace, and nothing of the server environment', async () => {
      await waitForRunning(h.url);
      const { env, uid } = await envIn(h.url, token);
      expect(env.SVC_PROJECT_ID).to.equal('proj-1');
      expect(env.SVC_SESSION_ID).to.equal(remote.branch);
      // The server's URLs point at the gateway on the sandbox's own loopback.
      expect(env.SVC_API_URL).to.equal('http://127.0.0.1:4080/v1');
      expect(env.SVC_REPO_URL).to.equal('http://127.0.0.1:4080/remote.git');
      expect(gw.used.has(h.sandboxId), 'the clone went through the gateway socket').to.equal(true);
      expect(env.SVC_SERVICE_PORT).to.equal('8000'); // its own network namespace: no port to share
      expect(env.SVC_WORKSPACE).to.equal('/workspace');
      expect(env.HOME).to.equal('/opt/svc/home');
      expect(env.SVC_TEST_SERVER_ONLY).to.equal(undefined);
      expect(env.DATABASE_URL).to.equal(undefined);
      expect(uid).to.equal(1000);
    });

    it("keeps the server's data dir and home out: a command in the sandbox cannot read them", async () => {
      await waitForRunning(h.url);
      const secret = path.join(dataDir, 'secret-key');
      const cat = await execIn(h.url, token, ['cat', secret]);
      expect(cat.code).to.not.equal(0);
      expect(cat.stdout).to.not.include('server secret');
      expect(cat.stderr).to.match(/No such file/);
      expect((await execIn(h.url, token, ['ls', dataDir])).code).to.not.equal(0);
      // The sandbox root (other sandboxes' workspaces) is not there either.
      expect((await execIn(h.url, token, ['ls', root])).code).to.not.equal(0);
      const home = process.env.HOME ?? '/root';
      expect((await execIn(h.url, token, ['ls', '-a', path.join(home, '.config')])).code).to.not.equal(0);
      // What is there: its workspace, its home, the CLI wrappers, /usr read-only.
      const ls = await execIn(h.url, token, ['ls', '/']);
      expect(ls.stdout.split('\n').filter(Boolean)).to.include.members(['workspace', 'usr', 'tmp', 'proc', 'opt']);
      expect((await execIn(h.url, token, ['sh', '-c', 'echo x > /usr/svc-probe'])).code).to.not.equal(0);
      expect((await execIn(h.url, token, ['sh', '-c', 'echo hi > /workspace/made-inside && cat /workspace/made-inside'])).stdout).to.equal('hi\n');
      expect(readFileSync(path.join(root, h.sandboxId, 'workspace', 'made-inside'), 'utf8')).to.equal('hi\n');
      expect((await execIn(h.url, token, ['svc', '--help'])).code, 'the CLI runs inside').to.equal(0);
      expect((await execIn(h.url, token, ['git', '-C', '/workspace', 'rev-parse', 'HEAD'])).stdout.trim()).to.equal(remote.tip(remote.branch));
    });

    it('sees only its own processes (new pid namespace)', async () => {
      await waitForRunning(h.url);
      const r = await execIn(h.url, token, ['sh', '-c', 'ls /proc | grep -E "^[0-9]+$"']);
      const pids = r.stdout.split('\n').filter(Boolean).map(Number);
      // reaper, entrypoint, daemon, runtime, sh, ls, grep: a handful, all small numbers.
      expect(pids.length).to.be.lessThan(15);
      expect(Math.max(...pids)).to.be.lessThan(100);
      expect(pids).to.include(1);
    });
  });

  it('outlives the process that created it; another provider instance re-attaches by label and destroys it: no process, no workspace left', async () => {
    const s = spec({ SVC_PROJECT_AUTO_CLONE: '0' });
    const r = spawnSync(
      process.execPath,
      [path.join(distRoot, 'test', 'sandbox', 'support', 'create-sandbox.js'), 'bwrap', JSON.stringify({ root }), JSON.stringify(s)],
      { encoding: 'utf8', timeout: 30_000 },
    );
    expect(r.status, r.stderr).to.equal(0);
    const created = JSON.parse(r.stdout) as SandboxHandle;
    handles.push(created);
    // The creator has exited; the sandbox still serves.
    await waitForRunning(created.url, 30_000, () => logOf(created));

    const again = createBwrapProvider({ root, stopGraceMs: 5_000 });
    const found = await again.list!({ 'svc.test': 'bwrap', 'svc.sandbox': s.sandboxId });
    expect(found).to.deep.equal([created]);
    expect(await again.inspect(found[0]!)).to.equal('running');
    expect(await again.list!({ 'svc.test': 'other' })).to.deep.equal([]);

    const meta = JSON.parse(readFileSync(path.join(root, s.sandboxId, 'sandbox.json'), 'utf8')) as { pidNamespace: number };
    const inside = pidsInNamespace(meta.pidNamespace);
    expect(inside.length, 'reaper, entrypoint, daemon, runtime').to.be.greaterThanOrEqual(4);

    await again.destroy(found[0]!);
    // Nothing of the sandbox runs any more (an exited pid may linger a moment as a zombie
    // until the host's init reaps it: it holds no memory, files or ports).
    const running = () => pidsInNamespace(meta.pidNamespace).filter((p) => !['Z', 'X', undefined].includes(procStat(p)?.state));
    expect(running()).to.deep.equal([]);
    for (const pid of inside) expect(procStat(pid)?.state ?? 'gone', `pid ${pid}`).to.be.oneOf(['gone', 'Z', 'X']);
    expect(existsSync(path.join(root, s.sandboxId))).to.equal(false);
    expect(await again.inspect(found[0]!)).to.equal('exited');
    await again.destroy(found[0]!); // idempotent
    expect(await again.list!({ 'svc.sandbox': s.sandboxId })).to.deep.equal([]);
  });

  it('binds no file:// repository: its path is absent inside, even when it is SVC_REPO_URL', async () => {
    // Sandboxes clone and push every project through the server's smart HTTP; a repository
    // path named by the environment is no reason to mount it (the bind once let an agent
    // plant hooks that the server ran as itself).
    const repoPath = fileURLToPath(remote.url);
    const h = await provider.create(spec({ SVC_REPO_URL: remote.url, SVC_PROJECT_AUTO_CLONE: '0' }));
    handles.push(h);
    await waitForRunning(h.url, 30_000, () => logOf(h));
    expect((await execIn(h.url, token, ['sh', '-c', `test -e '${repoPath}'`])).code, 'the repository path').to.not.equal(0);
    const mountinfo = await execIn(h.url, token, ['cat', '/proc/self/mountinfo']);
    expect(mountinfo.code).to.equal(0);
    expect(mountinfo.stdout).to.not.include(repoPath);
    await provider.destroy(h);
  });

  it('answers create twice for the same sandbox id with the same running sandbox (a retried worker step)', async () => {
    const s = spec({ SVC_PROJECT_AUTO_CLONE: '0' });
    const a = await provider.create(s);
    handles.push(a);
    const b = await provider.create(s);
    expect(b).to.deep.equal(a);
    await provider.destroy(a);
    expect(await provider.inspect(a)).to.equal('exited');
  });

  it('a pid reused by another process is not taken for the sandbox (start time differs)', async () => {
    const [pid, start] = `${process.pid}:${procStat(process.pid)!.startTime}`.split(':');
    expect(await provider.inspect({ sandboxId: 'x', provider: 'bwrap', url: 'http://127.0.0.1:1', ref: `${pid}:${start}` })).to.equal('running');
    expect(await provider.inspect({ sandboxId: 'x', provider: 'bwrap', url: 'http://127.0.0.1:1', ref: `${pid}:${Number(start) + 1}` })).to.equal('exited');
    expect(await provider.inspect({ sandboxId: 'x', provider: 'bwrap', url: 'http://127.0.0.1:1', ref: 'garbage' })).to.equal('unknown');
  });

  it('fails create with what bubblewrap said when it cannot set the sandbox up, and leaves nothing behind', async () => {
    // A host where bubblewrap is installed but namespaces are refused.
    const fake = path.join(t.dir, 'refusing-bwrap');
    writeFileSync(fake, '#!/bin/sh\necho "bwrap: No permissions to creating new namespace, likely because the kernel does not allow non-privileged user namespaces." >&2\nexit 1\n', { mode: 0o755 });
    const s = spec();
    const err = await createBwrapProvider({ root, bwrapPath: fake })
      .create(s)
      .then(
        () => undefined,
        (e: Error & { code?: string }) => e,
      );
    expect(err?.name).to.equal('SandboxError');
    expect((err as { code?: string }).code).to.equal('create_failed');
    expect(err?.message).to.match(/bwrap exited before the sandbox started \(exit 1\): bwrap: No permissions/);
    expect(existsSync(path.join(root, s.sandboxId))).to.equal(false);

    const noNode = await createBwrapProvider({ root, nodePath: '/nonexistent/node' })
      .create(spec())
      .then(
        () => undefined,
        (e: Error) => e,
      );
    expect(noNode?.message).to.equal('node binary not found at /nonexistent/node');
  });
});

describe('bwrap sandbox provider: the application installed under /tmp', function () {
  this.timeout(60_000);
  const probe = probeBwrap();
  let t: ReturnType<typeof tempDir>;
  let provider: SandboxProvider;
  let h: SandboxHandle | undefined;

  before(function () {
    if (!probe.ok) skipUnlessCi(this, `the bwrap provider tests: ${probe.reason}`);
  });
  after(async () => {
    if (h) await provider.destroy(h).catch(() => undefined);
    t?.cleanup();
  });

  it('starts the daemon from an app root under /tmp: the private /tmp does not hide it', async () => {
    t = tempDir('svc-bwrap-tmpapp-');
    expect(t.dir.startsWith('/tmp/') || t.dir.startsWith(os.tmpdir())).to.equal(true);
    // An install under /tmp: the application's dist, node_modules and package.json there.
    const app = path.join(t.dir, 'app');
    mkdirSync(app);
    cpSync(path.join(distRoot, '..', 'package.json'), path.join(app, 'package.json'));
    symlinkSync(distRoot, path.join(app, 'dist'));
    symlinkSync(realpathSync(path.join(distRoot, '..', 'node_modules')), path.join(app, 'node_modules'));
    provider = createBwrapProvider({ root: path.join(t.dir, 'sandboxes'), appRoot: app, stopGraceMs: 2_000 });
    h = await provider.create(
      sandboxSpec({ token: randomBytes(24).toString('hex'), branch: 'b', repoUrl: 'http://127.0.0.1:1/none.git', apiUrl: 'http://127.0.0.1:1', runtime: path.join(app, 'dist', 'test', 'sandbox', 'support', 'exec-runtime.js'), label: 'tmp-app', extra: { SVC_PROJECT_AUTO_CLONE: '0' } }),
    );
    const health = await waitForRunning(h.url, 30_000, () => {
      const f = path.join(t.dir, 'sandboxes', h!.sandboxId, 'sandbox.log');
      return existsSync(f) ? readFileSync(f, 'utf8').slice(-2000) : '';
    });
    expect(health.daemon).to.equal('ok');
  });
});
