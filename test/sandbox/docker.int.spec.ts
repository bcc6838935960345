import { randomBytes, randomUUID } from 'node:crypto';
import path from 'node:path';
import { expect } from 'chai';
import Docker from 'dockerode';
import { createDockerProvider, DEFAULT_SANDBOX_IMAGE } from '../../infra/sandbox/docker.js';
import type { SandboxHandle, SandboxProvider, SandboxSpec } from '../../infra/sandbox/port.js';
import { distRoot, makeRemote, tempDir } from '../agentd/support/harness.js';
import { startFakeApi, startGitHttpServer, type FakeApi, type GitHttpServer } from '../agentd/support/git-http-server.js';
import { envIn, execIn, waitForRunning } from './support/daemon-client.js';
import { sandboxSpec } from './support/sandbox-spec.js';
import { startTestGateway, type TestGateway } from './support/test-gateway.js';
import { hostListeningPorts, PROBE_PORTS_JS } from '../int/isolation/support.js';
import { sandboxFetch } from '../../lib/sandbox-dial.js';
import { skipUnlessCi } from '../support/skip.js';
import { DOCKERFILE as INIT_DOCKERFILE } from '../../cli/scaffold/templates.js';

/**
 * The docker provider against a real engine, with the default sandbox image
 * (ops/sandbox-image.sh; offline base: ops/sandbox-base-image.sh). `--network none`: the
 * daemon is reached on its socket, the sandbox reaches the (test) server through its
 * gateway socket only. The test runtime (exec-runtime.js) is mounted
 * into the container read-only.
 */
const image = process.env.SVC_TEST_SANDBOX_IMAGE ?? DEFAULT_SANDBOX_IMAGE;
const RUNTIME_DIR = '/opt/svc/app/dist/test-support';

async function engineReason(docker: Docker): Promise<string | undefined> {
  try {
    await Promise.race([docker.ping(), new Promise((_, reject) => setTimeout(() => reject(new Error('no answer in 3 s')), 3_000))]);
  } catch (err) {
    return `no Docker engine reachable (${(err as Error).message}); CI starts dockerd (see .ci/run)`;
  }
  try {
    await docker.getImage(image).inspect();
  } catch {
    return `image ${image} is missing: build it with ops/sandbox-base-image.sh && ops/sandbox-image.sh (CI does)`;
  }
  return undefined;
}

describe('docker sandbox provider (real engine)', function () {
  this.timeout(120_000);
  const docker = new Docker();
  let t: ReturnType<typeof tempDir>;
  let provider: SandboxProvider;
  let remote: ReturnType<typeof makeRemote>;
  let gitServer: GitHttpServer;
  let api: FakeApi;
  let gw: TestGateway;
  const handles: SandboxHandle[] = [];
  const builtImages = new Set<string>();
  const token = randomBytes(24).toString('hex');
  const username = 'x-access-token';
  const password = `clonepass-${randomBytes(8).toString('hex')}`;
  const testLabel = `run-${randomBytes(4).toString('hex')}`;

  const spec = (extra: Record<string, string> = {}): SandboxSpec =>
    sandboxSpec({ token, branch: remote.branch, repoUrl: `${gw.url}/remote.git`, apiUrl: `${gw.url}/v1`, runtime: `${RUNTIME_DIR}/exec-runtime.js`, label: testLabel, extra });
  const logsOf = async (h: SandboxHandle) =>
    `\n--- container log ---\n${String(await docker.getContainer(h.ref).logs({ stdout: true, stderr: true, tail: 60 }).catch((e: Error) => e.message))}`;
  const running = async (h: SandboxHandle) => {
    try {
      return await waitForRunning(h.url, 40_000);
    } catch (err) {
      throw new Error(`${(err as Error).message}${await logsOf(h)}`);
    }
  };

  before(async function () {
    const why = await engineReason(docker);
    if (why) {
      skipUnlessCi(this, `the docker provider tests: ${why}`);
    }
    t = tempDir('svc-docker-');
    remote = makeRemote(t.dir, { branch: randomUUID() });
    gitServer = await startGitHttpServer(t.dir, username, password);
    api = await startFakeApi(token, { username, password });
    gw = await startTestGateway({ api: api.url, git: gitServer.url });
    provider = createDockerProvider({
      image,
      root: path.join(t.dir, 'sockets'),
      gateway: gw,
      stopGraceSeconds: 5,
      binds: [`${path.join(distRoot, 'test', 'sandbox', 'support')}:${RUNTIME_DIR}:ro`],
    });
  });

  after(async () => {
    for (const h of handles) await provider?.destroy(h).catch(() => undefined);
    for (const tag of builtImages) await docker.getImage(tag).remove({ force: true }).catch(() => undefined);
    await gitServer?.close();
    await api?.close();
    await gw?.stop();
    t?.cleanup();
  });

  describe('one sandbox from the default image', () => {
    let h: SandboxHandle;
    let s: SandboxSpec;
    before(async () => {
      s = spec();
      h = await provider.create(s);
      handles.push(h);
    });

    it('runs the daemon in a labelled container with no network; /svc/health on its socket shows the repo cloned through the gateway on the session branch', async () => {
      expect(h.provider).to.equal('docker');
      expect(h.url).to.match(/^unix:\/.*\/daemon\/daemon\.sock$/);
      const health = await running(h);
      expect(health.branch).to.equal(remote.branch);
      expect(health.commit).to.equal(remote.tip(remote.branch));
      const info = await docker.getContainer(h.ref).inspect();
      expect(info.Config.Labels).to.include({ 'svc.project': 'proj-1', 'svc.session': remote.branch, 'svc.sandbox': s.sandboxId, 'svc.test': testLabel });
      expect(info.HostConfig.NetworkMode).to.equal('none');
      expect(gw.used.has(s.sandboxId), 'the clone went through the gateway socket').to.equal(true);
      expect(info.Config.Image).to.equal(image);
      expect(await provider.inspect(h)).to.equal('running');
    });

    it('has the spec layout and the injected environment inside', async () => {
      await running(h);
      const { env, uid } = await envIn(h.url, token);
      expect(env).to.include({ SVC_PROJECT_ID: 'proj-1', SVC_SESSION_ID: remote.branch, SVC_API_URL: 'http://127.0.0.1:4080/v1', SVC_WORKSPACE: '/workspace', HOME: '/opt/svc/home' });
      expect(env.SVC_SERVICE_PORT).to.equal('8000');
      expect(uid).to.equal(1000);
      const ls = await execIn(h.url, token, ['ls', '/usr/local/bin']);
      expect(ls.stdout.split('\n')).to.include.members(['svc', 'svc-agent', 'svc-entrypoint']);
      const help = await execIn(h.url, token, ['svc', '--help']);
      expect(help.code, JSON.stringify(help)).to.equal(0);
      expect((await execIn(h.url, token, ['git', '-C', '/workspace', 'rev-parse', 'HEAD'])).stdout.trim()).to.equal(remote.tip(remote.branch));
      expect((await execIn(h.url, token, ['sh', '-c', 'test -d /opt/svc/home && test -w /workspace'])).code).to.equal(0);
    });

    it('isolation: no host port answers from inside, mountinfo lists no host repository, a planted link does not redirect the server', async () => {
      await running(h);
      const ports = hostListeningPorts();
      expect(ports).to.include(Number(new URL(gitServer.url).port));
      const probe = await execIn(h.url, token, ['node', '-e', PROBE_PORTS_JS, ports.join(',')]);
      expect(probe.code, probe.stderr).to.equal(0);
      expect(JSON.parse(probe.stdout).answered).to.deep.equal([]);
      const mi = await execIn(h.url, token, ['cat', '/proc/self/mountinfo']);
      expect(mi.stdout).to.not.include(t.dir.replace(/^\/tmp/, '') + '/remote');
      expect((await execIn(h.url, token, ['sh', '-c', 'ln -sf /x /run/svc/gw/gateway.sock'])).code).to.not.equal(0);
      // The daemon's socket replaced by a link to the test's git server socket path (any host socket): the server refuses to dial it.
      const other = path.join(t.dir, 'sockets');
      const ln = await execIn(h.url, token, ['sh', '-c', `cp -P /run/svc/daemon/daemon.sock /tmp/keep 2>/dev/null; mv /run/svc/daemon/daemon.sock /run/svc/daemon/real.sock && ln -s '${other}/x.sock' /run/svc/daemon/daemon.sock`]);
      expect(ln.code, ln.stderr).to.equal(0);
      const err = await sandboxFetch(h.url, '/svc/health').then(() => 'answered', (e: Error) => e.message);
      expect(err).to.match(/not a socket/);
      // Put back for the tests that follow (through the real socket, which the sandbox kept).
      const real = h.url.replace(/daemon\.sock$/, 'real.sock');
      expect((await execIn(real, token, ['sh', '-c', 'rm /run/svc/daemon/daemon.sock && mv /run/svc/daemon/real.sock /run/svc/daemon/daemon.sock'])).code).to.equal(0);
    });

    it('is found again by label from a new provider (a restarted server), and destroy removes the container', async () => {
      await running(h);
      const again = createDockerProvider({ image, root: path.join(t.dir, 'sockets') });
      const found = await again.list!({ 'svc.test': testLabel, 'svc.sandbox': s.sandboxId });
      expect(found).to.deep.equal([h]);
      expect(await again.inspect(found[0]!)).to.equal('running');
      expect(await again.list!({ 'svc.test': 'nobody' })).to.deep.equal([]);

      await again.destroy(found[0]!);
      const gone = await docker
        .getContainer(h.ref)
        .inspect()
        .then(
          () => 'present',
          (err: { statusCode?: number }) => err.statusCode,
        );
      expect(gone).to.equal(404);
      expect(await again.inspect(h)).to.equal('exited');
      await again.destroy(h); // idempotent
      expect(await again.list!({ 'svc.sandbox': s.sandboxId })).to.deep.equal([]);
    });
  });

  it("builds the repo's Dockerfile (spec.dockerfile) on top of the default image, once, and runs the sandbox from it", async () => {
    const dockerfile = `ARG SVC_SANDBOX_IMAGE\nFROM \${SVC_SANDBOX_IMAGE}\nUSER root\nRUN echo from-repo-${testLabel} > /opt/repo-marker\nUSER 1000:1000\n`;
    // Two sandboxes starting together share one build.
    const [h, h2] = await Promise.all([provider.create({ ...spec({ SVC_PROJECT_AUTO_CLONE: '0' }), dockerfile }), provider.create({ ...spec({ SVC_PROJECT_AUTO_CLONE: '0' }), dockerfile })]);
    handles.push(h!, h2!);
    const info = await docker.getContainer(h!.ref).inspect();
    builtImages.add(info.Config.Image);
    expect(info.Config.Image).to.match(/^svc-repo-sandbox:[0-9a-f]{20}$/);
    expect((await docker.getContainer(h2!.ref).inspect()).Config.Image).to.equal(info.Config.Image);
    await running(h!);
    expect((await execIn(h!.url, token, ['cat', '/opt/repo-marker'])).stdout).to.equal(`from-repo-${testLabel}\n`);
    // The same Dockerfile later: the same image, not a new build.
    const h3 = await provider.create({ ...spec({ SVC_PROJECT_AUTO_CLONE: '0' }), dockerfile });
    handles.push(h3);
    expect((await docker.getContainer(h3.ref).inspect()).Config.Image).to.equal(info.Config.Image);
    // An image named by the manifest wins over the Dockerfile.
    const h4 = await provider.create({ ...spec({ SVC_PROJECT_AUTO_CLONE: '0' }), dockerfile, image });
    handles.push(h4);
    expect((await docker.getContainer(h4.ref).inspect()).Config.Image).to.equal(image);
    for (const x of [h!, h2!, h3, h4]) await provider.destroy(x);
  });

  it("runs a sandbox from the Dockerfile `svc init` writes: it builds on the provider's image, nothing is pulled", async () => {
    const h = await provider.create({ ...spec({ SVC_PROJECT_AUTO_CLONE: '0' }), dockerfile: INIT_DOCKERFILE });
    handles.push(h);
    const info = await docker.getContainer(h.ref).inspect();
    builtImages.add(info.Config.Image);
    expect(info.Config.Image).to.match(/^svc-repo-sandbox:[0-9a-f]{20}$/);
    // The built image's parent layers are the provider's image: FROM resolved to it, not to a registry tag.
    const [built, base] = await Promise.all([docker.getImage(info.Config.Image).inspect(), docker.getImage(image).inspect()]);
    expect(built.RootFS.Layers!.slice(0, base.RootFS.Layers!.length)).to.deep.equal(base.RootFS.Layers);
    await running(h);
    await provider.destroy(h);
  });

  it("holds the container to the spec's resources (svc.toml cpus, memory_mb): docker inspect shows NanoCpus and Memory", async () => {
    const h = await provider.create({ ...spec({ SVC_PROJECT_AUTO_CLONE: '0' }), resources: { cpus: 0.5, memoryMb: 256 } });
    handles.push(h);
    const { HostConfig } = await docker.getContainer(h.ref).inspect();
    expect(HostConfig.NanoCpus).to.equal(500_000_000);
    expect(HostConfig.Memory).to.equal(256 * 1024 * 1024);
    await running(h);
    // Inside, the cgroup holds the limit (cgroup v2, else v1).
    const limit = await execIn(h.url, token, ['sh', '-c', 'cat /sys/fs/cgroup/memory.max 2>/dev/null || cat /sys/fs/cgroup/memory/memory.limit_in_bytes']);
    expect(limit.stdout.trim()).to.equal(String(256 * 1024 * 1024));
    await provider.destroy(h);
  });

  it('answers create twice for the same sandbox id with the same container', async () => {
    const s = spec({ SVC_PROJECT_AUTO_CLONE: '0' });
    const a = await provider.create(s);
    handles.push(a);
    expect(await provider.create(s)).to.deep.equal(a);
    await provider.destroy(a);
  });

  it('fails with clear errors: a repo Dockerfile that does not build, an image the manifest names that is not on the engine, a missing default image, no engine', async () => {
    const err = await provider.create({ ...spec(), dockerfile: 'ARG SVC_SANDBOX_IMAGE\nFROM ${SVC_SANDBOX_IMAGE}\nRUN exit 7\n' }).then(
      () => undefined,
      (e: Error & { code?: string }) => e,
    );
    expect(err?.name).to.equal('SandboxError');
    expect(err?.code).to.equal('create_failed');
    expect(err?.message).to.match(/Dockerfile did not build: .*non-zero code: 7/);

    const noManifestImage = await provider.create({ ...spec(), image: 'svc-sandbox:not-pulled' }).then(
      () => undefined,
      (e: Error & { code?: string }) => e,
    );
    expect(noManifestImage?.code).to.equal('unavailable');
    expect(noManifestImage?.message).to.match(/svc-sandbox:not-pulled \(svc\.toml \[sandbox\] image\) not found on the engine: images are never pulled/);

    const noImage = await createDockerProvider({ image: 'svc-sandbox:does-not-exist' })
      .create(spec())
      .then(
        () => undefined,
        (e: Error & { code?: string }) => e,
      );
    expect(noImage?.code).to.equal('unavailable');
    expect(noImage?.message).to.match(/svc-sandbox:does-not-exist not found on the engine: build it with ops\/sandbox-image\.sh/);

    const noEngine = createDockerProvider({ docker: new Docker({ socketPath: path.join(t.dir, 'no-such.sock') }) });
    const down = await noEngine.create(spec()).then(
      () => undefined,
      (e: Error & { code?: string }) => e,
    );
    expect(down?.code).to.equal('unavailable');
    expect(down?.message).to.match(/Docker engine not reachable \(ENOENT\)/);
    expect(await noEngine.inspect({ sandboxId: 'x', provider: 'docker', ref: 'abc', url: '' })).to.equal('unknown');
  });
});
