import path from 'node:path';
import { z } from 'zod';

/**
 * The daemon's configuration, read once from the environment at boot. Names are the
 * spec's injected sandbox variables plus a few knobs (ports, runtime path, timings) that
 * let several daemons share one host in development and tests. See docs/agentd.md.
 */
const port = z.coerce.number().int().min(1).max(65535);
const ms = z.coerce.number().int().min(0).max(600_000);
const optionalText = z
  .string()
  .optional()
  .transform((v) => (v === undefined || v.trim() === '' ? undefined : v));
const flag = z
  .string()
  .optional()
  .transform((v) => v === '1' || v?.toLowerCase() === 'true');

export const envSchema = z.object({
  SVC_SERVICE_PORT: port.default(8000),
  SVC_BIND_HOST: z.string().min(1).default('0.0.0.0'),
  SVC_TOKEN: z.string().min(16, 'SVC_TOKEN must be set (at least 16 characters)'),
  SVC_AGENT_RUNTIME: z.string().min(1).default('opencode'),
  SVC_AGENT_PORT: port.default(4096),
  SVC_AGENT_HOME: z.string().min(1).default('/opt/svc/home'),
  SVC_WORKSPACE: z.string().min(1).default('/workspace'),
  SVC_PROJECT_ID: optionalText,
  SVC_SESSION_ID: optionalText,
  SVC_BRANCH_NAME: optionalText,
  SVC_REPO_URL: optionalText,
  SVC_DEFAULT_BRANCH: optionalText,
  SVC_BASE_REF: optionalText,
  SVC_API_URL: optionalText,
  SVC_AGENT_NAME: optionalText,
  SVC_AGENT_MODEL: optionalText,
  SVC_INITIAL_PROMPT: optionalText,
  SVC_LLM_BASE_URL: optionalText,
  SVC_LLM_API_KEY: optionalText,
  SVC_LLM_MODELS: optionalText,
  SVC_PROJECT_AUTO_CLONE: flag,
  SVC_BOOTSTRAP_AGENT_SESSION: flag,
  SVC_AGENT_RESTART_BACKOFF_MS: ms.default(500),
  SVC_AGENT_RESTART_BACKOFF_MAX_MS: ms.default(30_000),
  SVC_AGENT_STOP_GRACE_MS: ms.default(5_000),
  SVC_ABORT_TIMEOUT_MS: ms.default(5_000),
  // Every clone goes through the server (its smart HTTP, on the gateway): enough attempts
  // (1 s, 2 s, 4 s, 8 s, then 10 s apart: about a minute) to outlast a server restart.
  SVC_CLONE_ATTEMPTS: z.coerce.number().int().min(1).max(20).default(9),
  SVC_DAEMON_SOCKET: optionalText,
  // Pause and resume (docs/sessions.md): checkpoint at most this often; save at most this many bytes of files.
  SVC_WIP_CHECKPOINT_SECONDS: z.coerce.number().min(0).max(86_400).default(60),
  SVC_WIP_MAX_BYTES: z.coerce.number().int().min(0).default(100 * 1024 * 1024),
  /** A pool sandbox (docs/sessions.md "Pool"): no session yet; `POST /svc/claim` hands one over. */
  SVC_POOL: flag,
});

export interface AgentdConfig {
  servicePort: number;
  bindHost: string;
  token: string;
  runtime: { command: string; port: number; home: string };
  workspace: string;
  projectId: string | undefined;
  sessionId: string | undefined;
  branch: string | undefined;
  repoUrl: string | undefined;
  baseRef: string | undefined;
  apiUrl: string | undefined;
  agentName: string | undefined;
  agentModel: string | undefined;
  initialPrompt: string | undefined;
  /** The server's model gateway (docs/models.md): base URL, this sandbox's key, the models it offers. */
  llm: { baseUrl: string | undefined; apiKey: string | undefined; models: string[] };
  autoClone: boolean;
  bootstrapSession: boolean;
  restartBackoffMs: number;
  restartBackoffMaxMs: number;
  stopGraceMs: number;
  abortTimeoutMs: number;
  cloneAttempts: number;
  /** A Unix socket to serve on as well (the server's way in to an isolated sandbox). */
  daemonSocket: string | undefined;
  /** Pause and resume: the checkpoint interval (0: none) and the size cap. */
  wip: { intervalMs: number; maxBytes: number };
  /** Booted for the pool: no session, no credentials until `POST /svc/claim`. */
  pool: boolean;
}

const wipSchema = envSchema.pick({ SVC_WIP_CHECKPOINT_SECONDS: true, SVC_WIP_MAX_BYTES: true });

/**
 * The checkpoint settings a pool sandbox learns at its claim (the session's variables):
 * booted without a session, it has none of its own. A value that does not parse keeps `fallback`.
 */
export function wipOf(vars: Record<string, string | undefined>, fallback: AgentdConfig['wip']): AgentdConfig['wip'] {
  const seconds = wipSchema.shape.SVC_WIP_CHECKPOINT_SECONDS.safeParse(vars.SVC_WIP_CHECKPOINT_SECONDS ?? fallback.intervalMs / 1000);
  const bytes = wipSchema.shape.SVC_WIP_MAX_BYTES.safeParse(vars.SVC_WIP_MAX_BYTES ?? fallback.maxBytes);
  return {
    intervalMs: seconds.success ? Math.round(seconds.data * 1000) : fallback.intervalMs,
    maxBytes: bytes.success ? bytes.data : fallback.maxBytes,
  };
}

export class ConfigError extends Error {
  constructor(readonly issues: { path: string; message: string }[]) {
    super(`invalid daemon environment: ${issues.map((i) => `${i.path}: ${i.message}`).join('; ')}`);
    this.name = 'ConfigError';
  }
}

export function loadConfig(env: NodeJS.ProcessEnv): AgentdConfig {
  const parsed = envSchema.safeParse(env);
  if (!parsed.success) {
    throw new ConfigError(parsed.error.issues.map((i) => ({ path: i.path.join('.'), message: i.message })));
  }
  const e = parsed.data;
  if (e.SVC_SERVICE_PORT === e.SVC_AGENT_PORT) {
    throw new ConfigError([{ path: 'SVC_AGENT_PORT', message: 'must differ from SVC_SERVICE_PORT' }]);
  }
  if (e.SVC_PROJECT_AUTO_CLONE && !e.SVC_REPO_URL) {
    throw new ConfigError([{ path: 'SVC_REPO_URL', message: 'required when SVC_PROJECT_AUTO_CLONE=1' }]);
  }
  return {
    servicePort: e.SVC_SERVICE_PORT,
    bindHost: e.SVC_BIND_HOST,
    token: e.SVC_TOKEN,
    runtime: { command: e.SVC_AGENT_RUNTIME, port: e.SVC_AGENT_PORT, home: path.resolve(e.SVC_AGENT_HOME) },
    workspace: path.resolve(e.SVC_WORKSPACE),
    projectId: e.SVC_PROJECT_ID,
    sessionId: e.SVC_SESSION_ID,
    branch: e.SVC_BRANCH_NAME ?? e.SVC_SESSION_ID,
    repoUrl: e.SVC_REPO_URL,
    baseRef: e.SVC_BASE_REF ?? e.SVC_DEFAULT_BRANCH,
    apiUrl: e.SVC_API_URL?.replace(/\/+$/, ''),
    agentName: e.SVC_AGENT_NAME,
    agentModel: e.SVC_AGENT_MODEL,
    initialPrompt: e.SVC_INITIAL_PROMPT,
    llm: {
      baseUrl: e.SVC_LLM_BASE_URL?.replace(/\/+$/, ''),
      apiKey: e.SVC_LLM_API_KEY,
      models: (e.SVC_LLM_MODELS ?? '').split(',').map((m) => m.trim()).filter(Boolean),
    },
    autoClone: e.SVC_PROJECT_AUTO_CLONE,
    bootstrapSession: e.SVC_BOOTSTRAP_AGENT_SESSION,
    restartBackoffMs: e.SVC_AGENT_RESTART_BACKOFF_MS,
    restartBackoffMaxMs: Math.max(e.SVC_AGENT_RESTART_BACKOFF_MAX_MS, e.SVC_AGENT_RESTART_BACKOFF_MS),
    stopGraceMs: e.SVC_AGENT_STOP_GRACE_MS,
    abortTimeoutMs: e.SVC_ABORT_TIMEOUT_MS,
    cloneAttempts: e.SVC_CLONE_ATTEMPTS,
    daemonSocket: e.SVC_DAEMON_SOCKET,
    wip: { intervalMs: Math.round(e.SVC_WIP_CHECKPOINT_SECONDS * 1000), maxBytes: e.SVC_WIP_MAX_BYTES },
    pool: e.SVC_POOL,
  };
}

/** A repo URL safe to show: any `user:password@` part removed. */
export function displayRepoUrl(url: string | undefined): string | null {
  if (!url) return null;
  try {
    const u = new URL(url);
    u.username = '';
    u.password = '';
    return u.toString();
  } catch {
    // scp-like `git@host:path` or a plain path: nothing secret in it by construction.
    return url;
  }
}
