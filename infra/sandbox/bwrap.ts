/**
 * The `bwrap` sandbox provider: `svc-entrypoint` (which starts `svc-agent`) inside
 * bubblewrap, one per sandbox, on this host. Reference: docs/sandbox-providers.md.
 *
 * What the sandbox sees:
 *   - new user, pid, ipc, uts, mount and (when possible) cgroup namespaces; it runs as
 *     uid/gid 1000 with no capabilities, its pid 1 is bubblewrap's reaper, and it sees
 *     only its own processes;
 *   - a NETWORK NAMESPACE of its own (`--unshare-net`): only its own loopback, nothing of
 *     the host's network (not the server, not PostgreSQL, not another sandbox). The daemon
 *     listens on 127.0.0.1:8000 there and on /run/svc/daemon/daemon.sock, which the server
 *     dials; the server's gateway socket is bound read-only at /run/svc/gw, and
 *     svc-entrypoint exposes it on 127.0.0.1:4080, where SVC_API_URL and a managed clone
 *     URL point (infra/sandbox/gateway-dirs.ts);
 *   - host `/usr` (and the `/bin`, `/lib*` links or dirs) read-only, a few files of
 *     `/etc` that node, git and TLS need (certificates, resolver, hosts, alternatives,
 *     the loader cache) read-only, a generated `/etc/passwd` and `/etc/group`;
 *   - the application (its `dist`, `node_modules` and `package.json`) and the node
 *     binary read-only AT THEIR HOST PATHS, so paths the daemon records (its git
 *     credential helper is `<node> <dist>/agentd/svc-agent.js git-credential`) and an
 *     absolute SVC_AGENT_RUNTIME mean the same inside and outside;
 *   - `/workspace` (read-write, the sandbox's workspace dir on the host), `/opt/svc/home`
 *     (read-write, its home dir on the host), `/opt/svc/bin` (`svc`, `svc-agent`,
 *     `svc-entrypoint` wrappers), a private tmpfs `/tmp` (mounted before the application,
 *     so an app installed under /tmp stays visible), fresh `/proc` and `/dev`;
 *   - nothing else: not the server's data dir, not the server's home or `~/.config`,
 *     not the server's environment (the sandbox gets only the injected environment), and
 *     no repository: every project, `file://` ones included, is cloned and pushed through
 *     the server's smart HTTP on the gateway (docs/git-http.md "Relay").
 *
 * Lifetime. The sandbox must outlive the server process (a restart re-attaches), so
 * bwrap is started detached (its own session: a Ctrl-C on the server's terminal does
 * not reach it) and WITHOUT `--die-with-parent`, which would kill every sandbox with the
 * server. The price is that nothing kills a sandbox automatically when the server is
 * gone for good: the sessions layer re-attaches or sweeps them at start (`list`), and
 * `destroy` kills them. Identity: the host pid of the sandbox's pid-1 (bubblewrap
 * reports it on `--json-status-fd`) plus that process's start time from
 * `/proc/<pid>/stat`, so a recycled pid is never mistaken for the sandbox. Killing that
 * process ends the whole pid namespace: no process of the sandbox survives it.
 *
 * On the host each sandbox has `<root>/<name>/`: `workspace/`, `home/`, `bin/`, `etc/`,
 * `sandbox.log` (the daemon's output) and `sandbox.json` (pid, start time, url, labels;
 * no secrets: the environment is handed to the process, never written to disk).
 */
import { spawnSync, type ChildProcess } from 'node:child_process';
import { spawnChild } from '../../lib/spawn.js';
import { childrenOf, procStat, runsSince } from '../../lib/proc.js';
import { closeSync, existsSync, lstatSync, openSync, readFileSync, readlinkSync, realpathSync } from 'node:fs';
import { chmod, mkdir, readdir, readFile, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { SandboxError, type SandboxGatewayHost, type SandboxHandle, type SandboxLiveness, type SandboxProvider, type SandboxSpec } from './port.js';
import { appRoot as defaultAppRoot, labelsMatch, pollUntil, sandboxLabels, sandboxName, which } from './provider-util.js';
import { createSandboxCgroup, enterArgs, removeSandboxCgroup, type SandboxCgroup } from './cgroup.js';
import { cappedResources, limitedLaunch, type SandboxCaps } from './limits.js';
import { egressProxyEnv, prepareSocketDirs, routeThroughGateway, SANDBOX_DAEMON_DIR, SANDBOX_GATEWAY_DIR, socketEnv } from './gateway-dirs.js';
import { systemClock } from '../../lib/clock.js';

export interface BwrapProviderOptions {
  /** Host directory holding one subdirectory per sandbox. Created if missing. */
  root: string;
  /** The bwrap binary (default: `bwrap` on PATH). */
  bwrapPath?: string;
  /** The application root holding `dist/`, `node_modules/` and `package.json` (default: this checkout). */
  appRoot?: string;
  /** The node binary run inside (default: the server's own, `process.execPath`). */
  nodePath?: string;
  /** More host paths bound read-only at the same path (a runtime installed elsewhere, say). */
  readOnlyPaths?: string[];
  /** The server's end of every sandbox's gateway (absent: a sandbox reaches nothing outside itself). */
  gateway?: SandboxGatewayHost;
  /** uid/gid inside the sandbox (default 1000). */
  uid?: number;
  gid?: number;
  /** How long `destroy` lets the daemon stop the runtime before killing the sandbox (default 10 s). */
  stopGraceMs?: number;
  /** How long `create` waits for bubblewrap to set the sandbox up (default 15 s). */
  startTimeoutMs?: number;
  /** The agent runtime, when the spec's env does not name one (default: opencode from the app's node_modules). */
  runtime?: string;
  /** Variables added to every sandbox's environment (tests: fast restart backoff). */
  extraEnv?: Record<string, string>;
  /** What a sandbox's processes may use (infra/sandbox/limits.ts); absent: the host's limits. */
  caps?: SandboxCaps;
}

export const SANDBOX_WORKSPACE = '/workspace';
export const SANDBOX_HOME = '/opt/svc/home';
export const SANDBOX_BIN = '/opt/svc/bin';

interface Meta {
  sandboxId: string;
  name: string;
  pid: number;
  startTime: string;
  pidNamespace: number | null;
  /** The bwrap process outside the namespaces (the init's parent), and its start time. */
  outer?: { pid: number; startTime: string } | undefined;
  url: string;
  labels: Record<string, string>;
  createdAt: string;
}

function parseRef(ref: string): { pid: number; startTime: string } | undefined {
  const m = /^(\d+):(\d+)$/.exec(ref);
  return m ? { pid: Number(m[1]), startTime: m[2]! } : undefined;
}


/**
 * Whether bubblewrap can create the namespaces this provider needs on this host (it may
 * be installed yet refused, e.g. unprivileged user namespaces disabled).
 */
export function probeBwrap(bwrapPath = which('bwrap')): { ok: true; path: string } | { ok: false; reason: string } {
  if (!bwrapPath) return { ok: false, reason: 'bwrap is not installed (apt-get install bubblewrap)' };
  const r = spawnSync(
    bwrapPath,
    ['--unshare-user', '--unshare-pid', '--unshare-ipc', '--unshare-uts', '--ro-bind', '/', '/', '--proc', '/proc', '--dev', '/dev', '--', 'true'],
    { encoding: 'utf8', timeout: 10_000 },
  );
  if (r.status === 0) return { ok: true, path: bwrapPath };
  return { ok: false, reason: `bwrap cannot create namespaces here: ${(r.stderr || r.error?.message || `exit ${r.status}`).trim()}` };
}

export function createBwrapProvider(opts: BwrapProviderOptions): SandboxProvider {
  const root = path.resolve(opts.root);
  const bwrap = opts.bwrapPath ?? which('bwrap');
  const app = path.resolve(opts.appRoot ?? defaultAppRoot);
  const node = opts.nodePath ?? process.execPath;
  const uid = opts.uid ?? 1000;
  const gid = opts.gid ?? 1000;
  const stopGraceMs = opts.stopGraceMs ?? 10_000;
  const startTimeoutMs = opts.startTimeoutMs ?? 15_000;
  const entrypoint = path.join(app, 'dist', 'agentd', 'svc-entrypoint.js');

  const dirOf = (sandboxId: string) => path.join(root, sandboxName(sandboxId));

  async function readMeta(dir: string): Promise<Meta | undefined> {
    try {
      return JSON.parse(await readFile(path.join(dir, 'sandbox.json'), 'utf8')) as Meta;
    } catch {
      return undefined;
    }
  }

  const handleOf = (m: Meta): SandboxHandle => ({ sandboxId: m.sandboxId, provider: 'bwrap', url: m.url, ref: `${m.pid}:${m.startTime}` });

  /** Read-only binds of the host's system: /usr, the top-level links or dirs, parts of /etc. */
  function systemArgs(): string[] {
    const args = ['--ro-bind', '/usr', '/usr'];
    for (const top of ['bin', 'sbin', 'lib', 'lib32', 'lib64', 'libx32']) {
      const p = `/${top}`;
      const st = lstatSync(p, { throwIfNoEntry: false });
      if (!st) continue;
      const link = st.isSymbolicLink() ? readlinkSync(p) : undefined;
      if (link) args.push('--symlink', link, p);
      else args.push('--ro-bind', p, p);
    }
    // What node, git, TLS and name resolution read. Nothing else of the host's /etc.
    for (const f of [
      'ssl',
      'ca-certificates',
      'ca-certificates.conf',
      'pki',
      'resolv.conf',
      'hosts',
      'nsswitch.conf',
      'gai.conf',
      'host.conf',
      'services',
      'protocols',
      'localtime',
      'alternatives',
      'ld.so.cache',
      'ld.so.conf',
      'ld.so.conf.d',
    ]) {
      const p = `/etc/${f}`;
      if (existsSync(p)) args.push('--ro-bind', p, p);
    }
    return args;
  }

  /** The application and node, read-only at their host paths. */
  function appArgs(extra: string[]): string[] {
    const args: string[] = [];
    const bound: string[] = [];
    const bind = (hostPath: string, at = hostPath) => {
      if (!existsSync(hostPath)) return;
      if (bound.some((b) => at === b || at.startsWith(b + '/'))) return;
      bound.push(at);
      args.push('--ro-bind', hostPath, at);
    };
    if (!node.startsWith('/usr/')) bind(realpathSync(node), node);
    // node_modules is often a symlink (workspaces, a shared install): bind its target at
    // the path node resolves imports from.
    bind(path.join(app, 'package.json'));
    bind(path.join(app, 'dist'));
    const nm = path.join(app, 'node_modules');
    if (existsSync(nm)) bind(realpathSync(nm), nm);
    for (const p of extra) {
      if (!path.isAbsolute(p) || p.startsWith('/usr/')) continue;
      if (existsSync(p)) bind(realpathSync(p), p);
    }
    return args;
  }

  async function prepareDir(dir: string): Promise<void> {
    await mkdir(path.join(dir, 'workspace'), { recursive: true });
    await mkdir(path.join(dir, 'home'), { recursive: true });
    await mkdir(path.join(dir, 'bin'), { recursive: true });
    await mkdir(path.join(dir, 'etc'), { recursive: true });
    const js = (rel: string) => `#!/bin/sh\nexec '${node}' '${path.join(app, 'dist', rel)}' "$@"\n`;
    const wrappers: Record<string, string> = {
      svc: js('cli/main.js'),
      'svc-agent': js('agentd/svc-agent.js'),
      'svc-entrypoint': js('agentd/svc-entrypoint.js'),
    };
    for (const [name, body] of Object.entries(wrappers)) {
      await writeFile(path.join(dir, 'bin', name), body);
      await chmod(path.join(dir, 'bin', name), 0o755);
    }
    await writeFile(
      path.join(dir, 'etc', 'passwd'),
      `root:x:0:0:root:/root:/usr/sbin/nologin\nsvc:x:${uid}:${gid}:svc:${SANDBOX_HOME}:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n`,
    );
    await writeFile(path.join(dir, 'etc', 'group'), `root:x:0:\nsvc:x:${gid}:\nnogroup:x:65534:\n`);
  }

  /**
   * Waits for bubblewrap's JSON status (`{"child-pid": N, ...}`) in `statusFile`, or fails
   * with the log when bwrap exits first. A FILE, not a pipe: bwrap writes to it again
   * while it finishes setting up the namespaces (and at exit); a pipe whose reader has
   * gone kills it with SIGPIPE mid-setup and leaves the sandbox hanging before exec.
   */
  async function awaitChildPid(child: ChildProcess, statusFile: string, logFile: string): Promise<{ pid: number; pidNs: number | null }> {
    const log = () => {
      try {
        return readFileSync(logFile, 'utf8').slice(-2000).trim();
      } catch {
        return '';
      }
    };
    let exited: string | undefined;
    let spawnError: string | undefined;
    child.once('exit', (code, signal) => (exited = signal ?? `exit ${code}`));
    child.once('error', (err) => (spawnError = err.message));
    let found: { pid: number; pidNs: number | null } | undefined;
    await pollUntil(
      () => {
        const text = (() => {
          try {
            return readFileSync(statusFile, 'utf8');
          } catch {
            return '';
          }
        })();
        const m = /"child-pid"\s*:\s*(\d+)/.exec(text);
        if (m) {
          const ns = /"pid-namespace"\s*:\s*(\d+)/.exec(text);
          found = { pid: Number(m[1]), pidNs: ns ? Number(ns[1]) : null };
          return true;
        }
        return exited !== undefined || spawnError !== undefined;
      },
      startTimeoutMs,
      10,
    );
    if (found) return found;
    if (spawnError) throw new SandboxError('create_failed', `bwrap could not be started: ${spawnError}`);
    if (exited) throw new SandboxError('create_failed', `bwrap exited before the sandbox started (${exited}): ${log() || 'no output'}`);
    child.kill('SIGKILL');
    throw new SandboxError('create_failed', `bwrap did not start the sandbox within ${startTimeoutMs} ms: ${log()}`);
  }

  async function killSandbox(pid: number, startTime: string): Promise<void> {
    if (!runsSince(pid, startTime)) return;
    // Graceful: SIGTERM to svc-entrypoint (the reaper's child); it forwards to the daemon,
    // which stops the runtime's process group; when it exits the reaper exits too. Polled,
    // because right after create the reaper may not have forked the entrypoint yet.
    // Repeated every 500 ms: a SIGTERM that lands while bwrap's child is still setting up
    // (before it execs the entrypoint) is lost.
    let polls = 0;
    const gone = await pollUntil(() => {
      if (!runsSince(pid, startTime)) return true;
      if (polls++ % 10 !== 0) return false;
      for (const c of childrenOf(pid)) {
        try {
          process.kill(c, 'SIGTERM');
        } catch {
          /* gone */
        }
      }
      return false;
    }, stopGraceMs);
    if (gone) return;
    // Killing the pid namespace's init makes the kernel kill everything in it.
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      /* gone */
    }
    if (!(await pollUntil(() => !runsSince(pid, startTime), 5_000))) {
      throw new SandboxError('unavailable', `bwrap sandbox process ${pid} survived SIGKILL`);
    }
  }

  return {
    name: 'bwrap',

    async create(spec: SandboxSpec): Promise<SandboxHandle> {
      if (!bwrap) throw new SandboxError('unavailable', 'bwrap is not installed (apt-get install bubblewrap), or choose SVC_SANDBOX_PROVIDER=process');
      if (!existsSync(node)) throw new SandboxError('unavailable', `node binary not found at ${node}`);
      if (!existsSync(entrypoint)) throw new SandboxError('unavailable', `svc-entrypoint not found at ${entrypoint} (run npm run build)`);
      const name = sandboxName(spec.sandboxId);
      const dir = path.join(root, name);
      // Idempotent: a retried create (worker crash after starting it) finds the running one.
      const existing = await readMeta(dir);
      if (existing && runsSince(existing.pid, existing.startTime)) return handleOf(existing);
      if (existing || existsSync(dir)) await rm(dir, { recursive: true, force: true });
      await mkdir(root, { recursive: true });
      await prepareDir(dir);
      const sockets = await prepareSocketDirs(dir, spec.sandboxId, spec.projectId);
      await opts.gateway?.open(spec.sandboxId, sockets.gw, spec.projectId);
      const bundled = path.join(app, 'node_modules', '.bin', 'opencode');
      const runtime = spec.env.SVC_AGENT_RUNTIME ?? opts.extraEnv?.SVC_AGENT_RUNTIME ?? opts.runtime ?? (existsSync(bundled) ? bundled : undefined);
      const env: Record<string, string> = {
        PATH: `${SANDBOX_BIN}:/usr/local/bin:/usr/bin:/bin:${path.dirname(node)}:${path.join(app, 'node_modules', '.bin')}`,
        HOME: SANDBOX_HOME,
        USER: 'svc',
        LANG: 'C.UTF-8',
        TMPDIR: '/tmp',
        // A sandbox never updates its own tools; the host's install decides.
        OPENCODE_DISABLE_AUTOUPDATE: '1',
        ...(runtime ? { SVC_AGENT_RUNTIME: runtime } : {}),
        ...routeThroughGateway({ ...spec.env, ...opts.extraEnv }, opts.gateway),
        // The only way out: the egress proxy on its gateway (no other route exists).
        ...egressProxyEnv(),
        // Plumbing: its own loopback (a network namespace of its own), its sockets, the workspace path.
        SVC_SERVICE_PORT: spec.env.SVC_SERVICE_PORT ?? '8000',
        SVC_AGENT_PORT: spec.env.SVC_AGENT_PORT ?? '4096',
        SVC_BIND_HOST: '127.0.0.1',
        ...socketEnv(),
        SVC_WORKSPACE: SANDBOX_WORKSPACE,
        SVC_AGENT_HOME: SANDBOX_HOME,
        ...(spec.app ? { SVC_APP_COMMAND: spec.app.command } : {}),
      };
      const args = [
        '--unshare-user',
        '--uid',
        String(uid),
        '--gid',
        String(gid),
        '--unshare-pid',
        '--unshare-ipc',
        '--unshare-uts',
        '--unshare-cgroup-try',
        '--unshare-net',
        '--hostname',
        `svc-${name.slice(0, 20)}`,
        '--new-session',
        ...systemArgs(),
        // Before the application: a tmpfs mounted later would hide an app installed under /tmp.
        '--tmpfs',
        '/tmp',
        ...appArgs([...(opts.readOnlyPaths ?? []), ...(runtime && path.isAbsolute(runtime) ? [runtime] : [])]),
        '--ro-bind',
        path.join(dir, 'etc', 'passwd'),
        '/etc/passwd',
        '--ro-bind',
        path.join(dir, 'etc', 'group'),
        '/etc/group',
        '--proc',
        '/proc',
        '--dev',
        '/dev',
        '--ro-bind',
        sockets.gw,
        SANDBOX_GATEWAY_DIR,
        '--bind',
        sockets.daemon,
        SANDBOX_DAEMON_DIR,
        '--bind',
        spec.app ? spec.app.workspaceDir : path.join(dir, 'workspace'),
        SANDBOX_WORKSPACE,
        '--bind',
        path.join(dir, 'home'),
        SANDBOX_HOME,
        '--ro-bind',
        path.join(dir, 'bin'),
        SANDBOX_BIN,
        '--chdir',
        SANDBOX_WORKSPACE,
        '--json-status-fd',
        '3',
        '--',
        node,
        entrypoint,
      ];
      const logFile = path.join(dir, 'sandbox.log');
      const statusFile = path.join(dir, 'bwrap-status.json');
      const logFd = openSync(logFile, 'a', 0o600);
      const statusFd = openSync(statusFile, 'a', 0o600);
      // Limits: rlimits on the launch; memory, pids and cpu in a cgroup of its own where the
      // host allows one (entered before bwrap runs), else nice 19 for the CPU.
      let cgroup: SandboxCgroup | null = null;
      let launch = { file: bwrap, args };
      if (opts.caps) {
        const r = cappedResources(spec, opts.caps);
        cgroup = await createSandboxCgroup(name, { memoryMb: r.memoryMb, cpus: r.cpus, pids: opts.caps.pids }).catch(() => null);
        launch = limitedLaunch(bwrap, args, opts.caps, { nice: !cgroup, prlimit: which('prlimit') });
        if (cgroup) launch = enterArgs(cgroup, launch.file, launch.args);
      }
      let child;
      try {
        // A refused spawn (EMFILE, EAGAIN) is reported by awaitChildPid's own listener, as create_failed.
        child = spawnChild('sandbox', launch.file, launch.args, { env, detached: true, stdio: ['ignore', logFd, logFd, statusFd] }, () => undefined);
      } finally {
        closeSync(logFd);
        closeSync(statusFd);
      }
      let started: { pid: number; pidNs: number | null };
      try {
        started = await awaitChildPid(child, statusFile, logFile);
      } catch (err) {
        await opts.gateway?.close(spec.sandboxId).catch(() => undefined);
        await rm(dir, { recursive: true, force: true }).catch(() => undefined);
        await cgroup?.remove().catch(() => undefined);
        throw err;
      }
      child.unref();
      const st = procStat(started.pid);
      if (!st) throw new SandboxError('create_failed', `bwrap sandbox exited at once: ${readFileSync(logFile, 'utf8').slice(-2000)}`);
      const outerStat = child.pid ? procStat(child.pid) : undefined;
      const meta: Meta = {
        sandboxId: spec.sandboxId,
        name,
        pid: started.pid,
        startTime: st.startTime,
        pidNamespace: started.pidNs,
        outer: child.pid && outerStat ? { pid: child.pid, startTime: outerStat.startTime } : undefined,
        url: sockets.daemonUrl,
        labels: sandboxLabels(spec),
        createdAt: systemClock.now().toISOString(),
      };
      const tmp = path.join(dir, 'sandbox.json.tmp');
      await writeFile(tmp, JSON.stringify(meta, null, 2), { mode: 0o600 });
      await rename(tmp, path.join(dir, 'sandbox.json'));
      return handleOf(meta);
    },

    async inspect(handle: SandboxHandle): Promise<SandboxLiveness> {
      const ref = parseRef(handle.ref);
      if (!ref) return 'unknown';
      return runsSince(ref.pid, ref.startTime) ? 'running' : 'exited';
    },

    async destroy(handle: SandboxHandle): Promise<void> {
      const dir = dirOf(handle.sandboxId);
      const meta = await readMeta(dir);
      const ref = parseRef(handle.ref) ?? (meta ? { pid: meta.pid, startTime: meta.startTime } : undefined);
      if (ref) await killSandbox(ref.pid, ref.startTime);
      // The outer bwrap exits with its child; one that did not (seen once under heavy
      // load: the namespace's init gone, bwrap still waiting) is killed, never left behind.
      if (meta?.outer && runsSince(meta.outer.pid, meta.outer.startTime)) {
        try {
          process.kill(meta.outer.pid, 'SIGKILL');
        } catch {
          /* gone */
        }
      }
      await opts.gateway?.close(handle.sandboxId).catch(() => undefined);
      await rm(dir, { recursive: true, force: true });
      if (meta?.name) await removeSandboxCgroup(meta.name).catch(() => undefined);
    },

    async list(labels: Record<string, string>): Promise<SandboxHandle[]> {
      let names: string[];
      try {
        names = await readdir(root);
      } catch {
        return [];
      }
      const out: SandboxHandle[] = [];
      for (const n of names) {
        const m = await readMeta(path.join(root, n));
        if (m && labelsMatch(m.labels, labels)) out.push(handleOf(m));
      }
      return out;
    },
  };
}
