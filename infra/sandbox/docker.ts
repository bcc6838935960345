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
 * Networking:
 *   - `host` (the default, and what tests use): the container shares the host's network,
 *     like the bwrap provider. Each sandbox gets its own free daemon and runtime ports
 *     on 127.0.0.1 (SVC_SERVICE_PORT / SVC_AGENT_PORT / SVC_BIND_HOST are the provider's
 *     plumbing), every connection stays on loopback, and SVC_API_URL on loopback works.
 *   - any other network (`bridge`, a user-defined one): the daemon listens on its
 *     SVC_SERVICE_PORT (8000) in the container, published on `host` (127.0.0.1) at a
 *     port the engine picks; with `reachByName` the server (itself a container on that
 *     network) dials `http://<container name>:8000` instead. SVC_API_URL must then be an
 *     address the container reaches (`host.docker.internal` is mapped to the host
 *     gateway).
 *
 * Identity: the container id (`ref`); labels `svc.project`, `svc.session`, `svc.sandbox`,
 * `svc.managed-by=svc` plus the spec's labels find it again after a restart. Destroy =
 * stop (SIGTERM to svc-entrypoint, grace period) + remove with its anonymous volumes;
 * the workspace lives in the container and goes with it. The container runs with
 * `--init` (reaps orphaned zombies), no capabilities, no-new-privileges, as the image's
 * user (1000 in the default image).
 */
import { createHash } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import Docker from 'dockerode';
import { SandboxError, type SandboxHandle, type SandboxLiveness, type SandboxProvider, type SandboxSpec } from './port.js';
import { freePort, LABEL, sandboxLabels, sandboxName } from './provider-util.js';

export const DEFAULT_SANDBOX_IMAGE = 'svc-sandbox:local';
const SERVICE_PORT_LABEL = 'svc.service-port';

export interface DockerProviderOptions {
  /** Engine client (default: `new Docker()`, i.e. DOCKER_HOST or /var/run/docker.sock). */
  docker?: Docker;
  /** The default sandbox image (default `svc-sandbox:local`, built by ops/sandbox-image.sh). */
  image?: string;
  /** Network mode: `host` (default), `bridge`, or a network name. */
  network?: string;
  /** Address the server dials published ports on (default 127.0.0.1). */
  host?: string;
  /** Non-host networks: dial `http://<container name>:<port>` (the server is on the same network). */
  reachByName?: boolean;
  /** Variables added to every sandbox's environment (tests). */
  extraEnv?: Record<string, string>;
  /** Extra bind mounts (`host:container[:ro]`). */
  binds?: string[];
  /** Default limits (a spec's `resources` win): memory in bytes, CPUs (fractional); process count. */
  memoryBytes?: number;
  cpus?: number;
  pidsLimit?: number;
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

/** HostConfig limits: the spec's (the project's manifest) over the provider's defaults. */
function limitsOf(spec: Pick<SandboxSpec, 'resources'>, opts: Pick<DockerProviderOptions, 'cpus' | 'memoryBytes'>): Pick<Docker.HostConfig, 'Memory' | 'NanoCpus'> {
  const memory = spec.resources?.memoryMb ? spec.resources.memoryMb * 1024 * 1024 : opts.memoryBytes;
  const cpus = spec.resources?.cpus ?? opts.cpus;
  return { ...(memory ? { Memory: memory } : {}), ...(cpus ? { NanoCpus: Math.round(cpus * 1e9) } : {}) };
}

export function createDockerProvider(opts: DockerProviderOptions = {}): SandboxProvider {
  const docker = opts.docker ?? new Docker();
  const defaultImage = opts.image ?? DEFAULT_SANDBOX_IMAGE;
  const network = opts.network ?? 'host';
  const hostNet = network === 'host';
  const host = opts.host ?? '127.0.0.1';
  const grace = opts.stopGraceSeconds ?? 10;
  const dialHost = host.includes(':') ? `[${host}]` : host;

  const building = new Map<string, Promise<string>>();
  const containerName = (sandboxId: string) => `svc-sbx-${sandboxName(sandboxId)}`;

  function urlOf(c: { name: string; labels: Record<string, string>; published: (port: number) => number | undefined }): string {
    const port = Number(c.labels[SERVICE_PORT_LABEL] ?? 8000);
    if (hostNet) return `http://${dialHost}:${port}`;
    if (opts.reachByName) return `http://${c.name}:${port}`;
    const pub = c.published(port);
    return pub ? `http://${dialHost}:${pub}` : '';
  }

  function handleFromInspect(info: Docker.ContainerInspectInfo): SandboxHandle {
    const labels = info.Config.Labels ?? {};
    return {
      sandboxId: labels[LABEL.sandbox] ?? '',
      provider: 'docker',
      ref: info.Id,
      url: urlOf({
        name: info.Name.replace(/^\//, ''),
        labels,
        published: (port) => {
          const b = info.NetworkSettings?.Ports?.[`${port}/tcp`]?.[0];
          return b?.HostPort ? Number(b.HostPort) : undefined;
        },
      }),
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
      build = buildRepoImage(docker, dockerfile, defaultImage, network).finally(() => building.delete(dockerfile));
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
      const env: Record<string, string> = { ...spec.env, ...opts.extraEnv };
      const containerPort = Number(spec.env.SVC_SERVICE_PORT ?? 8000);
      const hostConfig: Docker.HostConfig = {
        NetworkMode: network,
        Init: true,
        CapDrop: ['ALL'],
        SecurityOpt: ['no-new-privileges'],
        ...(opts.binds?.length ? { Binds: opts.binds } : {}),
        ...limitsOf(spec, opts),
        ...(opts.pidsLimit ? { PidsLimit: opts.pidsLimit } : {}),
      };
      let exposed: Record<string, object> | undefined;
      if (hostNet) {
        // Shared network: ports of its own, loopback only.
        const servicePort = await freePort(host);
        let agentPort = await freePort(host);
        while (agentPort === servicePort) agentPort = await freePort(host);
        env.SVC_SERVICE_PORT = String(servicePort);
        env.SVC_AGENT_PORT = String(agentPort);
        env.SVC_BIND_HOST = host;
        labels[SERVICE_PORT_LABEL] = String(servicePort);
      } else {
        labels[SERVICE_PORT_LABEL] = String(containerPort);
        exposed = { [`${containerPort}/tcp`]: {} };
        if (!opts.reachByName) hostConfig.PortBindings = { [`${containerPort}/tcp`]: [{ HostIp: host, HostPort: '' }] };
        hostConfig.ExtraHosts = ['host.docker.internal:host-gateway'];
      }

      let container: Docker.Container;
      try {
        container = await docker.createContainer({
          name,
          Image: image,
          Env: Object.entries(env).map(([k, v]) => `${k}=${v}`),
          Labels: labels,
          ...(exposed ? { ExposedPorts: exposed } : {}),
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
      const handle = handleFromInspect(info);
      if (!handle.url) throw new SandboxError('create_failed', `container ${name} has no published port ${containerPort}`);
      return handle;
    },

    async inspect(handle: SandboxHandle): Promise<SandboxLiveness> {
      try {
        const info = await docker.getContainer(handle.ref).inspect();
        return info.State.Running ? 'running' : 'exited';
      } catch (err) {
        return status(err) === 404 ? 'exited' : 'unknown';
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
        url: urlOf({
          name: (c.Names[0] ?? '').replace(/^\//, ''),
          labels: c.Labels,
          published: (port) => c.Ports.find((p) => p.PrivatePort === port && p.PublicPort)?.PublicPort,
        }),
      }));
    },
  };
}
