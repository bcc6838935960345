/** Sandbox identity as the server stores it; the provider port (infra/sandbox/port.ts) works on these. */
export type SandboxProviderName = 'process' | 'bwrap' | 'docker' | 'kubernetes';

/** What the server keeps about a running sandbox, enough to reach it and to find it again. */
export interface SandboxHandle {
  sandboxId: string;
  provider: SandboxProviderName;
  /** Base URL of the daemon (`svc-agent`) as the server reaches it, e.g. `http://127.0.0.1:41234`. */
  url: string;
  /** Provider-specific identity: a pid, a container id, a pod name. Persisted; given back to `inspect`/`stop`. */
  ref: string;
}

/** Providers that give a sandbox no network namespace or filesystem of its own: logged and shown as unisolated. */
export const UNISOLATED_PROVIDERS: readonly SandboxProviderName[] = ['process'];
