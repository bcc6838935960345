/**
 * The sandbox provider port. A provider runs one sandbox: `svc-entrypoint` (PID 1 of the
 * sandbox) starting `svc-agent`, which clones the project repo into the workspace on the
 * session branch and fronts the agent runtime. Every provider obeys the same states and
 * receives the same injected environment (the spec's "Injected sandbox environment").
 *
 * Providers: `process` (a child process with its own workspace dir and ports; the
 * laptop default), `bwrap` (the same inside bubblewrap namespaces), `docker` (one
 * container per sandbox through the Engine API), `kubernetes` (one Pod + Service per
 * sandbox). Chosen by `SVC_SANDBOX_PROVIDER`.
 */

import type { SandboxHandle, SandboxProviderName } from '../../domain/sandbox.js';

export type { SandboxHandle, SandboxProviderName };

export interface SandboxSpec {
  /** One sandbox incarnation (a restart makes a new one). */
  sandboxId: string;
  sessionId: string;
  projectId: string;
  accountId: string;
  /**
   * The injected environment: the spec's SVC_* table plus the project's secrets. The
   * provider adds only what its own plumbing needs (ports, workspace path on a shared
   * host) and never drops or renames a variable given here.
   */
  env: Record<string, string>;
  /**
   * The project's `[sandbox]` settings (svc.toml, docs/manifest.md), set by the session
   * provisioning. `image`: docker / kubernetes run it instead of their default image
   * (never pulled by docker). `dockerfile`: the content of the repo's Dockerfile at the
   * session's base commit; docker builds it (once per distinct content) when no `image`
   * is given; kubernetes cannot build and ignores it. `process` and `bwrap` run no image.
   */
  image?: string;
  dockerfile?: string;
  /** Resource limits: enforced by docker (NanoCpus, Memory) and kubernetes (limits = requests); not by process or bwrap. */
  resources?: SandboxResources;
  /** Labels for re-attaching after a server restart (docker labels, pod labels). */
  labels: Record<string, string>;
  /**
   * An app sandbox (`[[apps]]`): instead of the daemon, `svc-entrypoint` runs
   * `/bin/sh -c <command>` (env SVC_APP_COMMAND) in the workspace, which is this host
   * directory (the merged commit's tree, exported by the deploy): bound as the workspace
   * by `bwrap`, used as it is by `process`. The app listens on `PORT` (in `env`) on the
   * sandbox's loopback, which the server shares with these two providers. docker and
   * kubernetes refuse app sandboxes (`unavailable`): they have no host directory to bind.
   */
  app?: { command: string; workspaceDir: string };
}

export interface SandboxResources {
  /** CPUs, fractional (docker `--cpus`, kubernetes `cpu`). */
  cpus?: number;
  /** Memory in MiB (docker `--memory`, kubernetes `memory: <n>Mi`). */
  memoryMb?: number;
}


export type SandboxLiveness = 'running' | 'exited' | 'unknown';

export interface SandboxProvider {
  readonly name: SandboxProviderName;
  /**
   * Starts the sandbox and returns once the provider has started it (not once the daemon
   * answers: the caller waits for `GET <url>/svc/health`). Throws `SandboxError` on failure.
   */
  create(spec: SandboxSpec): Promise<SandboxHandle>;
  /** Whether a sandbox created earlier (perhaps by another server process) still runs. */
  inspect(handle: SandboxHandle): Promise<SandboxLiveness>;
  /**
   * CPU time its processes have used so far, in seconds, where the provider reports it
   * (docker); null when it cannot say (gone, not reported). Read before `destroy`.
   */
  cpuSeconds?(handle: SandboxHandle): Promise<number | null>;
  /** Stops it and frees everything it held (workspace, container, pod). Idempotent. */
  destroy(handle: SandboxHandle): Promise<void>;
  /** Every sandbox of this provider that carries `labels` (re-attach / orphan sweep at start). */
  list?(labels: Record<string, string>): Promise<SandboxHandle[]>;
  /** Releases provider resources held by the server process itself (clients, timers). */
  close?(): Promise<void>;
}

/**
 * The server side of every sandbox's gateway (docs/sandbox-providers.md, "Network"): the
 * server listens on a Unix socket it creates in a directory the sandbox sees read-only;
 * inside, `svc-entrypoint` exposes it on the sandbox's loopback. Requests through it carry
 * the sandbox's identity in-process (api/gateway.ts). Providers call `open` before they
 * start a sandbox and `close` when they destroy it.
 */
export interface SandboxGatewayHost {
  /** The server's own origin: env values under it (SVC_API_URL, a managed clone URL …) are rewritten to the gateway. */
  serverOrigin(): string;
  /**
   * Serves sandbox `sandboxId`'s gateway on `<dir>/gateway.sock` and, given the project
   * (bwrap, docker: sandboxes with a network namespace of their own), its egress proxy on
   * `<dir>/egress.sock`, deciding for that project.
   */
  open(sandboxId: string, dir: string, projectId?: string): Promise<void>;
  close(sandboxId: string): Promise<void>;
}

export class SandboxError extends Error {
  constructor(
    readonly code: 'unavailable' | 'create_failed' | 'not_found',
    message: string,
    readonly detail?: Record<string, unknown>,
  ) {
    super(message);
    this.name = 'SandboxError';
  }
}
