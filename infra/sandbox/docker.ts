/**
 * The `docker` sandbox provider: one container per sandbox through the Engine API
 * (dockerode). Reference: docs/sandbox-providers.md.
 *
 * Image: `spec.image` when the caller chose one (the manifest's `[sandbox] image`); else
 * `spec.dockerfile`, the repo's Dockerfile (built once per distinct Dockerfile, with build
 * arg `SVC_SANDBOX_IMAGE` = the default image so it can extend it, tagged
 * `svc-repo-sandbox:<hash>`); else the default sandbox image (ops/sandbox.Dockerfile,
 * `svc-sandbox:local` unless configured). Images are never pulled implicitly.
 *
 * Limits: `spec.resources` (the manifest's `cpus`, `memory_mb`) over the provider's own
 * `cpus` / `memoryBytes`, as HostConfig NanoCpus / Memory.
 *
 * Networking: `--network none`, always. The container has its own loopback and nothing
 * else: not the host's network, not a bridge (which would put sandboxes on private-range
 * addresses that reach each other). The daemon listens on 127.0.0.1:8000 inside and on
 * /run/svc/daemon/daemon.sock, a directory bound from `<root>/<name>/daemon` on the host,
 * which the server dials (lib/sandbox-dial.ts); the server's gateway socket is bound
 * read-only at /run/svc/gw, and svc-entrypoint exposes it on 127.0.0.1:4080, where
 * SVC_API_URL and a managed clone URL point (infra/sandbox/gateway-dirs.ts). The server
 * and the engine must share the host's filesystem (the socket directories are host paths).
 *
 * Identity: the container id (`ref`); labels `svc.project`, `svc.session`, `svc.sandbox`,
 * `svc.managed-by=svc` plus the spec's labels find it again after a restart. Destroy =
 * stop (SIGTERM to svc-entrypoint, grace period) + remove with its anonymous volumes;
 * the workspace lives in the container and goes with it. The container runs with
 * `--init` (reaps orphaned zombies), no capabilities, no-new-privileges, as the image's
 * user (1000 in the default image).
 */
import { createHash } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import Docker from 'dockerode';
import { SandboxError, type SandboxGatewayHost, type SandboxHandle, type SandboxLiveness, type SandboxProvider, type SandboxSpec } from './port.js';
import type { SandboxCaps } from './limits.js';
import { LABEL, sandboxLabels, sandboxName } from './provider-util.js';
import { DAEMON_SOCKET, egressProxyEnv, prepareSocketDirs, routeThroughGateway, SANDBOX_DAEMON_DIR, SANDBOX_GATEWAY_DIR, socketEnv } from './gateway-dirs.js';
import { socketUrl } from '../../lib/sandbox-dial.js';

export const DEFAULT_SANDBOX_IMAGE = 'svc-sandbox:local';
const SOCKET_DIR_LABEL = 'svc.socket-dir';

export interface DockerProviderOptions {
  /** Engine client (default: `new Docker()`, i.e. DOCKER_HOST or /var/run/docker.sock). */
  docker?: Docker;
  /** The default sandbox image (default `svc-sandbox:local`, built by ops/sandbox-image.sh). */
  image?: string;
  /** Host directory holding one socket directory per sandbox (`<root>/<name>/{gw,daemon}`). */
  root?: string;
  /** The server's end of every sandbox's gateway (absent: a sandbox reaches nothing outside itself). */
  gateway?: SandboxGatewayHost;
  /** Variables added to every sandbox's environment (tests). */
  extraEnv?: Record<string, string>;
  /** Extra bind mounts (`host:container[:ro]`). */
  binds?: string[];
  /** Default limits (a spec's `resources` win): memory in bytes, CPUs (fractional); process count. */
  memoryBytes?: number;
  cpus?: number;
  pidsLimit?: number;
  /** The server's caps on every sandbox (infra/sandbox/limits.ts): the most, and the default. */
  caps?: SandboxCaps;
  /** Seconds `destroy` lets the daemon stop before the engine kills it (default 10). */
  stopGraceSeconds?: number;
}

interface EngineError {
  statusCode?: number;
  code?: string;
  message: string;
  json?: { message?: string };
}

const status = (err: unknown) => (err as EngineError)?.statusCode;
const reason = (err: unknown) => {
  const e = err as EngineError;
  return e?.json?.message ?? e?.message ?? String(err);
};

/** Turns "cannot reach the engine" into a clear `unavailable`; other errors pass. */
function engineError(err: unknown, what: string): Error {
  const e = err as EngineError;
  if (e?.code === 'ECONNREFUSED' || e?.code === 'ENOENT' || e?.code === 'EACCES' || e?.code === 'ETIMEDOUT') {
    return new SandboxError('unavailable', `Docker engine not reachable (${e.code}): ${e.message}. Start dockerd, or set DOCKER_HOST`);
  }
  if (err instanceof SandboxError) return err;
  return new SandboxError('create_failed', `${what}: ${reason(err)}`, { status: status(err) });
}

/** Builds (once) the image of a repo's `.svc/Dockerfile`, FROM-able on `baseImage` through `ARG SVC_SANDBOX_IMAGE`. */
export async function buildRepoImage(docker: Docker, dockerfile: string, baseImage: string, network = 'host'): Promise<string> {
  const base = await docker
    .getImage(baseImage)
    .inspect()
    .catch((err: unknown) => {
      if (status(err) === 404) throw new SandboxError('unavailable', `sandbox image ${baseImage} not found: build it with ops/sandbox-image.sh`);
      throw engineError(err, `inspect image ${baseImage}`);
    });
  const tag = `svc-repo-sandbox:${createHash('sha256').update(base.Id).update('\0').update(dockerfile).digest('hex').slice(0, 20)}`;
  const have = await docker
    .getImage(tag)
    .inspect()
    .then(
      () => true,
      () => false,
    );
  if (have) return tag;
  const dir = await mkdtemp(path.join(os.tmpdir(), 'svc-repo-image-'));
  try {
    await writeFile(path.join(dir, 'Dockerfile'), dockerfile);
    const stream = await docker.buildImage(
      { context: dir, src: ['Dockerfile'] },
      { t: tag, buildargs: { SVC_SANDBOX_IMAGE: baseImage }, networkmode: network, rm: true, forcerm: true, labels: { [LABEL.managedBy]: 'svc' } },
    );
    const events = await new Promise<{ error?: string; errorDetail?: { message?: string }; stream?: string }[]>((resolve, reject) =>
      docker.modem.followProgress(stream, (err: Error | null, out: unknown[]) => (err ? reject(err) : resolve(out as never))),
    );
    const failed = events.find((e) => e.error || e.errorDetail);
    if (failed) {
      const log = events
        .map((e) => e.stream ?? '')
        .join('')
        .slice(-1500);
      throw new SandboxError('create_failed', `the repo's Dockerfile did not build: ${failed.errorDetail?.message ?? failed.error}\n${log}`);
    }
  } catch (err) {
    throw engineError(err, "build the repo's Dockerfile");
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
  return tag;
}

/**
 * HostConfig limits: the spec's (the project's manifest) over the provider's defaults,
 * each at most the server's cap (`caps`, which is also the default): memory (swap
 * included: no more swap than memory), CPUs, pids, and RLIMIT_NOFILE/RLIMIT_NPROC.
 */
function limitsOf(spec: Pick<SandboxSpec, 'resources'>, opts: Pick<DockerProviderOptions, 'cpus' | 'memoryBytes' | 'pidsLimit' | 'caps'>): Pick<Docker.HostConfig, 'Memory' | 'MemorySwap' | 'NanoCpus' | 'PidsLimit' | 'Ulimits'> {
  let memory = spec.resources?.memoryMb ? spec.resources.memoryMb * 1024 * 1024 : opts.memoryBytes;
  let cpus = spec.resources?.cpus ?? opts.cpus;
  let pids = opts.pidsLimit;
  const caps = opts.caps;
  if (caps) {
    memory = Math.min(memory ?? Infinity, caps.memoryMb * 1024 * 1024);
    cpus = Math.min(cpus ?? Infinity, caps.cpus);
    pids = Math.min(pids ?? Infinity, caps.pids);
  }
  return {
    ...(memory ? { Memory: memory, MemorySwap: memory } : {}),
    ...(cpus ? { NanoCpus: Math.round(cpus * 1e9) } : {}),
    ...(pids ? { PidsLimit: pids } : {}),
    ...(caps ? { Ulimits: [{ Name: 'nofile', Soft: caps.nofile, Hard: caps.nofile }, { Name: 'nproc', Soft: caps.nproc, Hard: caps.nproc }] } : {}),
  };
}

export function createDockerProvider(opts: DockerProviderOptions = {}): SandboxProvider {
  const docker = opts.docker ?? new Docker();
  const defaultImage = opts.image ?? DEFAULT_SANDBOX_IMAGE;
  const root = path.resolve(opts.root ?? path.join(os.tmpdir(), 'svc-docker-sandboxes'));
  const grace = opts.stopGraceSeconds ?? 10;

  const building = new Map<string, Promise<string>>();
  const containerName = (sandboxId: string) => `svc-sbx-${sandboxName(sandboxId)}`;

  const dirOf = (sandboxId: string) => path.join(root, sandboxName(sandboxId));
  const urlOf = (labels: Record<string, string>) => (labels[SOCKET_DIR_LABEL] ? socketUrl(path.join(labels[SOCKET_DIR_LABEL], 'daemon', DAEMON_SOCKET)) : '');

  function handleFromInspect(info: Docker.ContainerInspectInfo): SandboxHandle {
    const labels = info.Config.Labels ?? {};
    return {
      sandboxId: labels[LABEL.sandbox] ?? '',
      provider: 'docker',
      ref: info.Id,
      url: urlOf(labels),
    };
  }

  async function inspectByName(name: string): Promise<Docker.ContainerInspectInfo | undefined> {
    try {
      return await docker.getContainer(name).inspect();
    } catch (err) {
      if (status(err) === 404) return undefined;
      throw engineError(err, `inspect container ${name}`);
    }
  }

  async function imageFor(spec: SandboxSpec): Promise<string> {
    if (spec.image) return spec.image;
    const dockerfile = spec.dockerfile;
    if (!dockerfile?.trim()) return defaultImage;
    // Sandboxes starting together with one Dockerfile share one build.
    let build = building.get(dockerfile);
    if (!build) {
      build = buildRepoImage(docker, dockerfile, defaultImage).finally(() => building.delete(dockerfile));
      building.set(dockerfile, build);
    }
    return build;
  }

  return {
    name: 'docker',

    async create(spec: SandboxSpec): Promise<SandboxHandle> {
      if (spec.app) throw new SandboxError('unavailable', `app sandboxes need the process or bwrap provider (the docker provider has no host directory to run the app from)`);
      const name = containerName(spec.sandboxId);
      // Idempotent: a retried create finds the sandbox it started; a dead one is replaced.
      const existing = await inspectByName(name);
      if (existing?.State.Running) return handleFromInspect(existing);
      if (existing) await docker.getContainer(existing.Id).remove({ force: true, v: true }).catch(() => undefined);

      const image = await imageFor(spec);
      await docker
        .getImage(image)
        .inspect()
        .catch((err: unknown) => {
          if (status(err) === 404 && spec.image) {
            throw new SandboxError('unavailable', `sandbox image ${image} (svc.toml [sandbox] image) not found on the engine: images are never pulled implicitly; pull or build it on the engine's host`);
          }
          if (status(err) === 404) {
            throw new SandboxError('unavailable', `sandbox image ${image} not found on the engine: build it with ops/sandbox-image.sh (offline: ops/sandbox-base-image.sh first), or set SVC_SANDBOX_IMAGE`);
          }
          throw engineError(err, `inspect image ${image}`);
        });

      const labels = sandboxLabels(spec);
      const dir = dirOf(spec.sandboxId);
      await rm(dir, { recursive: true, force: true });
      await mkdir(root, { recursive: true });
      const sockets = await prepareSocketDirs(dir, spec.sandboxId, spec.projectId);
      labels[SOCKET_DIR_LABEL] = dir;
      const env: Record<string, string> = {
        ...routeThroughGateway({ ...spec.env, ...opts.extraEnv }, opts.gateway),
        // The only way out: the egress proxy on its gateway (`--network none`: no other route).
        ...egressProxyEnv(),
        SVC_BIND_HOST: '127.0.0.1',
        ...socketEnv(),
      };
      const hostConfig: Docker.HostConfig = {
        NetworkMode: 'none',
        Init: true,
        CapDrop: ['ALL'],
        SecurityOpt: ['no-new-privileges'],
        Binds: [`${sockets.gw}:${SANDBOX_GATEWAY_DIR}:ro`, `${sockets.daemon}:${SANDBOX_DAEMON_DIR}`, ...(opts.binds ?? [])],
        ...limitsOf(spec, opts),
      };
      await opts.gateway?.open(spec.sandboxId, sockets.gw, spec.projectId);

      let container: Docker.Container;
      try {
        container = await docker.createContainer({
          name,
          Image: image,
          Env: Object.entries(env).map(([k, v]) => `${k}=${v}`),
          Labels: labels,
          HostConfig: hostConfig,
        });
      } catch (err) {
        if (status(err) === 409) {
          // Another create of the same sandbox won the race: answer that one.
          const other = await inspectByName(name);
          if (other) return handleFromInspect(other);
        }
        throw engineError(err, `create container ${name} from ${image}`);
      }
      try {
        await container.start();
      } catch (err) {
        await container.remove({ force: true, v: true }).catch(() => undefined);
        throw engineError(err, `start container ${name}`);
      }
      const info = await container.inspect().catch((err: unknown) => {
        throw engineError(err, `inspect container ${name}`);
      });
      return handleFromInspect(info);
    },

    async inspect(handle: SandboxHandle): Promise<SandboxLiveness> {
      try {
        const info = await docker.getContainer(handle.ref).inspect();
        return info.State.Running ? 'running' : 'exited';
      } catch (err) {
        return status(err) === 404 ? 'exited' : 'unknown';
      }
    },

    async cpuSeconds(handle: SandboxHandle): Promise<number | null> {
      try {
        const stats = await docker.getContainer(handle.ref || containerName(handle.sandboxId)).stats({ stream: false, 'one-shot': true }); // one reading: the total is cumulative, no second sample needed
        const ns = stats?.cpu_stats?.cpu_usage?.total_usage;
        return typeof ns === 'number' && Number.isFinite(ns) && ns > 0 ? ns / 1e9 : null;
      } catch {
        return null; // gone, or the engine cannot say: no CPU time rather than a failed stop
      }
    },

    async destroy(handle: SandboxHandle): Promise<void> {
      const c = docker.getContainer(handle.ref || containerName(handle.sandboxId));
      try {
        await c.stop({ t: grace });
      } catch (err) {
        // 304: already stopped; 404: already gone.
        if (status(err) !== 304 && status(err) !== 404) throw engineError(err, `stop container ${handle.ref}`);
      }
      try {
        await c.remove({ force: true, v: true });
      } catch (err) {
        // 404: gone; 409: removal already in progress.
        if (status(err) !== 404 && status(err) !== 409) throw engineError(err, `remove container ${handle.ref}`);
      }
      await opts.gateway?.close(handle.sandboxId).catch(() => undefined);
      await rm(dirOf(handle.sandboxId), { recursive: true, force: true });
    },

    async list(labels: Record<string, string>): Promise<SandboxHandle[]> {
      const filter = Object.entries({ [LABEL.managedBy]: 'svc', ...labels }).map(([k, v]) => `${k}=${v}`);
      let found: Docker.ContainerInfo[];
      try {
        found = await docker.listContainers({ all: true, filters: JSON.stringify({ label: filter }) });
      } catch (err) {
        throw engineError(err, 'list containers');
      }
      return found.map((c) => ({
        sandboxId: c.Labels[LABEL.sandbox] ?? '',
        provider: 'docker' as const,
        ref: c.Id,
        url: urlOf(c.Labels),
      }));
    },
  };
}
