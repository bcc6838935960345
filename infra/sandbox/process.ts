import { spawnChild } from '../../lib/spawn.js';
import { limitedLaunch, type SandboxCaps } from './limits.js';
import { existsSync, openSync, closeSync } from 'node:fs';
import { chmod, mkdir, readdir, readFile, readlink, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { freePort } from '../../lib/net.js';
import { carriesEnv, pidsCarryingEnv } from '../../lib/proc.js';
import { projectRoot } from '../../lib/paths.js';
import type { Logger } from '../../lib/logger.js';
import { prepareSocketDirs, routeThroughGateway, socketEnv } from './gateway-dirs.js';
import { labelsMatch, sandboxLabels, which } from './provider-util.js';
import { SandboxError, type SandboxGatewayHost, type SandboxHandle, type SandboxLiveness, type SandboxProvider, type SandboxSpec } from './port.js';

/**
 * The `process` provider: `svc-entrypoint` as a child process of the server, in its own
 * process group (so a server crash leaves it running, to be re-attached by pid), with
 * its own directory under `<data dir>/sandboxes/<sandbox id>/`:
 *   workspace/  the repo clone (SVC_WORKSPACE)
 *   home/       the agent runtime's HOME (SVC_AGENT_HOME, off the repo)
 *   bin/        `svc` and `svc-agent` for the agent's shell
 *   sandbox.log what the entrypoint, daemon and runtime print
 *   process.json pid, url and labels (no secrets), for `list` (the orphan sweep)
 * and free loopback ports (daemon, runtime, gateway). NO ISOLATION beyond that: it shares
 * the host's network and filesystem, so it runs only when chosen explicitly, is logged and
 * shown as unisolated, and is refused once a second account exists unless
 * SVC_ALLOW_UNISOLATED=1 (services/sessions/provision.ts). It still reaches the server
 * through its gateway socket (`gw/gateway.sock`, forwarded by svc-entrypoint from its
 * gateway port), so its credentials are checked like every sandbox's.
 *
 * The environment is the injected one plus PATH/LANG and this provider's plumbing,
 * never the server's own (no DATABASE_URL, no SVC_SECRET_KEY).
 */
export interface ProcessProviderOptions {
  dataDir: string;
  /** The runtime the daemon launches; default opencode from node_modules/.bin. */
  runtime?: string;
  logger: Logger;
  /** Extra variables for every sandbox (tests: fast restart backoff). */
  extraEnv?: Record<string, string>;
  /** The server's end of every sandbox's gateway. */
  gateway?: SandboxGatewayHost;
  /** RLIMIT_NOFILE/RLIMIT_NPROC of its processes (the rest of infra/sandbox/limits.ts needs isolation this provider has not). */
  caps?: SandboxCaps;
}

const dist = path.join(projectRoot, 'dist');
export const ENTRYPOINT = path.join(dist, 'agentd', 'svc-entrypoint.js');

export function defaultRuntime(): string {
  const local = path.join(projectRoot, 'node_modules', '.bin', 'opencode');
  return existsSync(local) ? local : 'opencode';
}

export function createProcessProvider(opts: ProcessProviderOptions): SandboxProvider {
  const root = path.join(opts.dataDir, 'sandboxes');
  const dirOf = (id: string) => path.join(root, id);
  const log = opts.logger.child({ component: 'sandbox-process' });

  const alive = async (pid: number, sandboxId: string): Promise<boolean> => {
    try {
      process.kill(pid, 0);
    } catch {
      return false;
    }
    // The pid may have been reused: it must still be this sandbox's entrypoint.
    return (await carriesEnv(pid, `SVC_SANDBOX_ID=${sandboxId}`)) !== false;
  };

  return {
    name: 'process',
    async create(spec: SandboxSpec): Promise<SandboxHandle> {
      const dir = dirOf(spec.sandboxId);
      await rm(dir, { recursive: true, force: true });
      const bin = path.join(dir, 'bin');
      await mkdir(path.join(dir, 'home'), { recursive: true });
      // A temp dir of its own: what the sandbox leaves there goes with it at destroy.
      await mkdir(path.join(dir, 'tmp'), { recursive: true });
      await mkdir(bin, { recursive: true });
      for (const [name, script] of [['svc', 'cli/main.js'], ['svc-agent', 'agentd/svc-agent.js']] as const) {
        const file = path.join(bin, name);
        await writeFile(file, `#!/bin/sh\nexec '${process.execPath}' '${path.join(dist, script)}' "$@"\n`);
        await chmod(file, 0o755);
      }
      // A login shell (`bash -l`, how the runtime runs its tools) reads the host's
      // /etc/profile, which on Debian resets PATH: BASH_ENV, read after it, puts the
      // sandbox's tools back (never the host's /etc: this file is the sandbox's own).
      const profile = path.join(dir, 'profile.sh');
      const tools = `${bin}:${path.dirname(process.execPath)}`;
      await writeFile(profile, `# svc: this sandbox's tools on PATH, also after a login shell's /etc/profile.\ncase ":$PATH:" in *:'${bin}':*) ;; *) PATH='${tools}':"$PATH"; export PATH ;; esac\n`);
      const [servicePort, agentPort, gatewayPort] = [await freePort(), await freePort(), await freePort()];
      const sockets = await prepareSocketDirs(dir, spec.sandboxId);
      // No egress socket nor proxy variables: this sandbox shares the host's network, so a
      // proxy would bind only the clients that chose to use it (docs/sandbox-providers.md).
      await opts.gateway?.open(spec.sandboxId, sockets.gw);
      const { SVC_DAEMON_SOCKET: _own, SVC_EGRESS_SOCKET: _e, SVC_EGRESS_PORT: _p, ...gatewayEnv } = socketEnv(gatewayPort, sockets.gw);
      const env: Record<string, string> = {
        PATH: `${bin}:${path.dirname(process.execPath)}:${process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin'}`,
        LANG: process.env.LANG ?? 'C.UTF-8',
        HOME: path.join(dir, 'home'),
        TMPDIR: path.join(dir, 'tmp'),
        BASH_ENV: path.join(dir, 'profile.sh'),
        // A sandbox never updates its own tools; the image (here: node_modules) decides.
        OPENCODE_DISABLE_AUTOUPDATE: '1',
        ...routeThroughGateway({ ...spec.env, ...opts.extraEnv }, opts.gateway, gatewayPort),
        ...(opts.gateway ? gatewayEnv : {}),
        SVC_SANDBOX_ID: spec.sandboxId,
        SVC_SERVICE_PORT: String(servicePort),
        SVC_AGENT_PORT: String(agentPort),
        SVC_BIND_HOST: '127.0.0.1',
        SVC_WORKSPACE: spec.app ? spec.app.workspaceDir : path.join(dir, 'workspace'),
        ...(spec.app ? { SVC_APP_COMMAND: spec.app.command } : {}),
        SVC_AGENT_HOME: path.join(dir, 'home'),
        SVC_AGENT_RUNTIME: opts.runtime ?? defaultRuntime(),
      };
      // Written before the spawn too (no pid yet): a crash right after it leaves a sandbox
      // the orphan sweep still finds (destroy kills by the id in the environment).
      const writeMeta = (ref: string) => {
        const meta: ProcessMeta = { sandboxId: spec.sandboxId, provider: 'process', url: `http://127.0.0.1:${servicePort}`, ref, labels: sandboxLabels(spec) };
        return writeFile(path.join(dir, 'process.json'), JSON.stringify(meta, null, 2), { mode: 0o600 });
      };
      await writeMeta('');
      const out = openSync(path.join(dir, 'sandbox.log'), 'a');
      let spawnError: Error | undefined;
      let child;
      try {
        const launch = opts.caps ? limitedLaunch(process.execPath, [ENTRYPOINT], opts.caps, { nice: false, prlimit: which('prlimit') }) : { file: process.execPath, args: [ENTRYPOINT] };
        child = spawnChild('sandbox', launch.file, launch.args, { env, cwd: dir, detached: true, stdio: ['ignore', out, out] }, (err) => (spawnError = err));
      } finally {
        closeSync(out);
      }
      const pid = child.pid;
      if (!pid) {
        // Node reports a refused spawn on the next tick: wait for it, for the reason.
        await new Promise((r) => setImmediate(r));
        await opts.gateway?.close(spec.sandboxId).catch(() => undefined);
        await rm(dir, { recursive: true, force: true }).catch(() => undefined);
        throw new SandboxError('create_failed', `could not start svc-entrypoint: ${spawnError?.message ?? 'no process'}`);
      }
      child.unref();
      log.info({ sandbox_id: spec.sandboxId, session_id: spec.sessionId, pid, port: servicePort }, 'sandbox started');
      await writeMeta(String(pid));
      return { sandboxId: spec.sandboxId, provider: 'process', url: `http://127.0.0.1:${servicePort}`, ref: String(pid) };
    },

    async inspect(handle: SandboxHandle): Promise<SandboxLiveness> {
      const pid = Number(handle.ref);
      if (!Number.isInteger(pid) || pid <= 1) return 'unknown';
      return (await alive(pid, handle.sandboxId)) ? 'running' : 'exited';
    },

    async destroy(handle: SandboxHandle): Promise<void> {
      const pid = Number(handle.ref);
      if (Number.isInteger(pid) && pid > 1 && (await alive(pid, handle.sandboxId))) {
        // The entrypoint leads its own group: the daemon and the runtime go with it.
        const signal = (sig: NodeJS.Signals) => {
          try {
            process.kill(-pid, sig);
          } catch {
            /* gone */
          }
        };
        signal('SIGTERM');
        const deadline = performance.now() + 5000;
        while (performance.now() < deadline && (await alive(pid, handle.sandboxId))) await new Promise((r) => setTimeout(r, 25));
        signal('SIGKILL');
      }
      // Whatever the sandbox started in groups of its own (the runtime, its tools) goes too.
      await killTagged(handle.sandboxId);
      await opts.gateway?.close(handle.sandboxId).catch(() => undefined);
      await rm(dirOf(handle.sandboxId), { recursive: true, force: true });
      await removeBridges(root, path.join(dirOf(handle.sandboxId), 'workspace'));
      log.info({ sandbox_id: handle.sandboxId }, 'sandbox destroyed');
    },

    async list(labels: Record<string, string>): Promise<SandboxHandle[]> {
      const out: SandboxHandle[] = [];
      for (const name of await readdir(root).catch(() => [] as string[])) {
        const meta = await readFile(path.join(root, name, 'process.json'), 'utf8')
          .then((t) => JSON.parse(t) as ProcessMeta)
          .catch(() => null);
        if (meta?.provider !== 'process' || !labelsMatch(meta.labels, labels)) continue;
        out.push({ sandboxId: meta.sandboxId, provider: 'process', url: meta.url, ref: meta.ref });
      }
      return out;
    },
  };
}

interface ProcessMeta extends SandboxHandle {
  labels: Record<string, string>;
}

/** SIGKILL for every process that carries this sandbox's id in its environment (Linux). */
async function killTagged(sandboxId: string): Promise<void> {
  for (const pid of await pidsCarryingEnv(`SVC_SANDBOX_ID=${sandboxId}`)) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      /* gone */
    }
  }
}

/**
 * A resumed sandbox links its predecessor's workspace path to its own (agentd/wip.ts: the
 * runtime remembers each conversation's directory): `<root>/<old id>/workspace` → this
 * workspace. Those links, and the directories that hold nothing else, go with it.
 */
async function removeBridges(root: string, workspace: string): Promise<void> {
  for (const name of await readdir(root).catch(() => [] as string[])) {
    const dir = path.join(root, name);
    const link = path.join(dir, 'workspace');
    if ((await readlink(link).catch(() => null)) !== workspace) continue;
    await rm(link, { force: true });
    if ((await readdir(dir).catch(() => ['?'])).length === 0) await rm(dir, { recursive: true, force: true });
  }
}
