import { randomBytes, randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import Docker from 'dockerode';
import { createBwrapProvider, probeBwrap } from '../../infra/sandbox/bwrap.js';
import { probeCgroups } from '../../infra/sandbox/cgroup.js';
import { createDockerProvider, DEFAULT_SANDBOX_IMAGE } from '../../infra/sandbox/docker.js';
import type { SandboxCaps } from '../../infra/sandbox/limits.js';
import type { SandboxHandle, SandboxProvider, SandboxSpec } from '../../infra/sandbox/port.js';
import { distRoot, makeRemote, tempDir } from '../agentd/support/harness.js';
import { startFakeApi, startGitHttpServer, type FakeApi, type GitHttpServer } from '../agentd/support/git-http-server.js';
import { execIn, execRuntimeBin, waitForRunning } from './support/daemon-client.js';
import { sandboxSpec } from './support/sandbox-spec.js';
import { startTestGateway, type TestGateway } from './support/test-gateway.js';
import { skipUnlessCi } from '../support/skip.js';
import { eventually } from '../support/wait.js';

/**
 * What a sandbox's processes may use, from inside, under the real providers: a malicious
 * agent's fork bomb, memory hog and descriptor hoard meet the server's caps
 * (SVC_SANDBOX_MAX_*, given to the provider as `caps`), and nothing outside the sandbox
 * pays for them. The manifest asks for more memory than the cap: the cap wins.
 */
const CAPS: SandboxCaps = { memoryMb: 512, cpus: 0.5, pids: 96, nofile: 256, nproc: 65_536 };
const RUNTIME_DIR = '/opt/svc/app/dist/test-support';

/** Forks 300 sleepers; prints how many forks succeeded (echo is a builtin: no fork needed to say it). */
const FORK_BOMB = 'ok=0; i=0; while [ $i -lt 300 ]; do (sleep 5 >/dev/null 2>&1 </dev/null &) 2>/dev/null && ok=$((ok+1)); i=$((i+1)); done; echo $ok';
/** Allocates 16 MiB at a time, touched, until something stops it. */
const hog = (chunks: number) => `const a = []; for (let i = 0; i < ${chunks}; i++) a.push(Buffer.alloc(16 * 1024 * 1024, 1)); console.log('allocated');`;

function limitsSuite(name: 'docker' | 'bwrap', setup: () => Promise<{ skip: string } | { make: (gw: TestGateway, dir: string) => SandboxProvider; runtime: string; cgroup: { ok: boolean; reason?: string } }>): void {
  describe(`sandbox limits under ${name}: descriptors, processes, memory`, function () {
    this.timeout(180_000);
    let t: ReturnType<typeof tempDir>;
    let provider: SandboxProvider;
    let remote: ReturnType<typeof makeRemote>;
    let gitServer: GitHttpServer;
    let api: FakeApi;
    let gw: TestGateway;
    let h: SandboxHandle;
    let cgroup: { ok: boolean; reason?: string } = { ok: false };
    const token = randomBytes(24).toString('hex');
    const username = 'x-access-token';
    const password = `clonepass-${randomBytes(8).toString('hex')}`;

    before(async function () {
      const got = await setup();
      if ('skip' in got) return skipUnlessCi(this, got.skip);
      cgroup = got.cgroup;
      t = tempDir(`svc-limits-${name}-`);
      remote = makeRemote(t.dir, { branch: randomUUID() });
      gitServer = await startGitHttpServer(t.dir, username, password);
      api = await startFakeApi(token, { username, password });
      gw = await startTestGateway({ api: api.url, git: gitServer.url });
      provider = got.make(gw, t.dir);
      const spec: SandboxSpec = {
        ...sandboxSpec({ token, branch: remote.branch, repoUrl: `${gw.url}/remote.git`, apiUrl: `${gw.url}/v1`, runtime: got.runtime, label: `limits-${randomBytes(3).toString('hex')}` }),
        resources: { memoryMb: 8192 },
      };
      h = await provider.create(spec);
      await waitForRunning(h.url, 60_000);
    });

    after(async () => {
      if (h) await provider?.destroy(h).catch(() => undefined);
      await gitServer?.close();
      await api?.close();
      await gw?.stop();
      t?.cleanup();
    });

    it("RLIMIT_NOFILE of the sandbox's processes is the server's cap; a descriptor hoard stops there", async () => {
      const r = await execIn(h.url, token, ['sh', '-c', 'ulimit -n; ulimit -Hn']);
      expect(r.code, r.stderr).to.equal(0);
      expect(r.stdout.trim().split('\n')).to.deep.equal([String(CAPS.nofile), String(CAPS.nofile)]);
      const hoard = await execIn(h.url, token, ['node', '-e', "const fs=require('fs'); let n=0; try { for(;;) { fs.openSync('/dev/null','r'); n++; } } catch (e) { console.log(e.code, n); }"]);
      expect(hoard.stdout.trim()).to.match(/^EMFILE \d+$/);
      expect(Number(hoard.stdout.trim().split(' ')[1])).to.be.below(CAPS.nofile);
    });

    it("a fork bomb inside stops at the sandbox's pids limit; the sandbox's daemon still answers", async function () {
      if (name === 'bwrap' && !cgroup.ok) return skipUnlessCi(this, `no cgroup can be made for bwrap sandboxes here: ${cgroup.reason}`);
      const r = await execIn(h.url, token, ['sh', '-c', FORK_BOMB]);
      const forked = Number(r.stdout.trim().split('\n').pop());
      expect(forked, r.stdout + r.stderr).to.be.within(1, CAPS.pids);
      expect((await waitForRunning(h.url, 30_000)).daemon).to.equal('ok');
      // Once the sleepers exit, the sandbox starts processes again (node needs a dozen threads).
      await eventually(async () => (await execIn(h.url, token, ['node', '-e', '0']).catch(() => null))?.code === 0, 'node starts again in the sandbox', { timeoutMs: 90_000 });
    });

    it("memory past the cap (the manifest's 8 GiB capped to 512 MiB) ends the allocating process, not the server", async function () {
      if (name === 'bwrap' && !cgroup.ok) return skipUnlessCi(this, `no cgroup can be made for bwrap sandboxes here: ${cgroup.reason}`);
      // 64 MiB fits; 1 GiB ends in the kernel's OOM kill (137) or V8's abort on a failed allocation (134).
      const small = await execIn(h.url, token, ['sh', '-c', `node -e "${hog(4)}"; echo "exit $?"`]);
      expect(small.stdout.trim().split('\n'), small.stderr).to.deep.equal(['allocated', 'exit 0']);
      const r = await execIn(h.url, token, ['sh', '-c', `node -e "${hog(64)}"; echo "exit $?"`]);
      expect(r.stdout).to.not.contain('allocated');
      expect(r.stdout.trim()).to.be.oneOf(['exit 137', 'exit 134']);
    });

    if (name === 'docker') {
      it('docker: the container carries --memory (swap included), --cpus, --pids-limit and --ulimit nofile,nproc at the caps', async () => {
        const info = await new Docker().getContainer(h.ref).inspect();
        const hc = info.HostConfig;
        expect(hc.Memory).to.equal(CAPS.memoryMb * 1024 * 1024);
        expect(hc.MemorySwap).to.equal(CAPS.memoryMb * 1024 * 1024);
        expect(hc.NanoCpus).to.equal(CAPS.cpus * 1e9);
        expect(hc.PidsLimit).to.equal(CAPS.pids);
        expect(hc.Ulimits).to.deep.include.members([
          { Name: 'nofile', Soft: CAPS.nofile, Hard: CAPS.nofile },
          { Name: 'nproc', Soft: CAPS.nproc, Hard: CAPS.nproc },
        ]);
      });
    } else {
      it('bwrap: CPU is bounded: cpu.max in its cgroup where one can be made, else its processes run at nice 19', async () => {
        const r = await execIn(h.url, token, ['sh', '-c', 'cut -d" " -f19 /proc/self/stat']);
        expect(r.stdout.trim()).to.equal(cgroup.ok ? '0' : '19');
        if (cgroup.ok) {
          // The sandbox's init (the handle's pid) sits in a cgroup of its own whose CPU quota is the cap.
          const pid = Number(h.ref.split(':')[0]);
          const lines = readFileSync(`/proc/${pid}/cgroup`, 'utf8').trim().split('\n');
          const v2 = lines.find((l) => l.startsWith('0::'));
          const v1 = lines.find((l) => /^\d+:[^:]*\bcpu\b[^:]*:/.test(l));
          const rel = (v1 ?? v2)!.split(':')[2]!;
          expect(rel).to.match(/svc-sandbox-/);
          const quota = v1
            ? readFileSync(path.join('/sys/fs/cgroup/cpu', rel, 'cpu.cfs_quota_us'), 'utf8').trim()
            : readFileSync(path.join('/sys/fs/cgroup', rel, 'cpu.max'), 'utf8').trim().split(' ')[0];
          expect(Number(quota)).to.equal(CAPS.cpus * 100_000);
        }
      });
    }
  });
}

limitsSuite('docker', async () => {
  const docker = new Docker();
  try {
    await Promise.race([docker.ping(), new Promise((_, reject) => setTimeout(() => reject(new Error('no answer in 3 s')), 3_000))]);
    await docker.getImage(DEFAULT_SANDBOX_IMAGE).inspect();
  } catch (err) {
    return { skip: `no Docker engine or no ${DEFAULT_SANDBOX_IMAGE} here (${(err as Error).message})` };
  }
  return {
    runtime: `${RUNTIME_DIR}/exec-runtime.js`,
    cgroup: { ok: true },
    make: (gw, dir) =>
      createDockerProvider({
        image: DEFAULT_SANDBOX_IMAGE,
        root: path.join(dir, 'sockets'),
        gateway: gw,
        stopGraceSeconds: 2,
        binds: [`${path.join(distRoot, 'test', 'sandbox', 'support')}:${RUNTIME_DIR}:ro`],
        caps: CAPS,
      }),
  };
});

limitsSuite('bwrap', async () => {
  const probe = probeBwrap();
  if (!probe.ok) return { skip: `bubblewrap cannot run here: ${probe.reason}` };
  const cgroup = await probeCgroups();
  return {
    runtime: execRuntimeBin,
    cgroup: cgroup.ok ? { ok: true } : { ok: false, reason: cgroup.reason },
    make: (gw, dir) => createBwrapProvider({ root: path.join(dir, 'data', 'sandboxes'), stopGraceMs: 2_000, gateway: gw, caps: CAPS }),
  };
});
