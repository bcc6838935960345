import path from 'node:path';
import { z } from 'zod';
import { parseCidrList } from '../lib/cidr.js';

/** A price per million tokens: a finite number, zero or more (a free model is priced, at 0). */
const pricePerMtok = z.number().finite().min(0).max(1_000_000);
/** SVC_LLM_PRICES, parsed: one currency for every model, so sums never mix currencies. */
export const LlmPricesSchema = z.strictObject({
  currency: z.string().regex(/^[A-Za-z][A-Za-z0-9_]{0,15}$/, 'must be a currency name such as USD or EUR (letters, digits, _; at most 16)'),
  models: z.record(z.string().min(1).max(200), z.strictObject({ input: pricePerMtok, output: pricePerMtok })),
});
export type LlmPrices = z.infer<typeof LlmPricesSchema>;

/**
 * Server configuration, from the environment only, validated once at start-up. A bad
 * value stops the process with one line per problem, naming the variable.
 */
const schema = z.object({
  PORT: z.coerce.number().int().min(0).max(65535).default(8080),
  HOST: z.string().min(1).default('0.0.0.0'),
  SVC_DATA_DIR: z.string().min(1).default('./.svc-data'),
  DATABASE_URL: z
    .string()
    .regex(/^postgres(ql)?:\/\//, 'must be a postgres:// or postgresql:// URL')
    .optional(),
  SVC_GIT_ENGINE: z.enum(['git', 'libgit2']).default('git'),
  LOG_LEVEL: z.enum(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent']).default('info'),
  /** Public base URL of this server, used in links (CR URLs, dashboard) and managed repositories' URLs. */
  SVC_PUBLIC_URL: z.string().url().optional(),
  /**
   * Previews are served at `p<port>-<session id>.<SVC_PREVIEW_DOMAIN>` (a wildcard DNS name
   * pointing at this server); required when SVC_PUBLIC_URL is not loopback. Unset on a
   * loopback install: `p<port>-<session id>.localhost:<PORT>`.
   */
  SVC_PREVIEW_DOMAIN: z
    .string()
    .regex(/^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(:\d{1,5})?$/i, 'must be a DNS name (optionally :port)')
    .optional(),
  /**
   * Without SVC_PUBLIC_URL: the origins this server is reached at (comma-separated
   * `http(s)://host[:port]`). A managed repository's URL is the one whose host the creating
   * request named, else the first; never a Host header this list does not hold.
   */
  SVC_PUBLIC_HOSTS: z
    .string()
    .default('')
    .superRefine((v, ctx) => {
      for (const e of v.split(',').map((s) => s.trim()).filter(Boolean)) {
        let u: URL | null = null;
        try {
          u = new URL(e);
        } catch {
          /* reported below */
        }
        if (!u || !/^https?:$/.test(u.protocol) || u.pathname !== '/' || u.search || u.hash || u.username || u.password || e.replace(/\/$/, '') !== u.origin) {
          ctx.addIssue({ code: 'custom', message: `not an http(s) origin: ${e}` });
        }
      }
    }),
  /** Key for secrets at rest (32 bytes, base64). Generated into the data dir when absent. */
  SVC_SECRET_KEY: z.string().optional(),
  /**
   * Allow projects whose repo_url is a path on this server (`file://`). Off by default:
   * a tenant could otherwise point a project at any repository the server can read,
   * another project's mirror included. For tests and single-tenant installs.
   */
  SVC_ALLOW_FILE_REPOS: z
    .enum(['0', '1', 'true', 'false'])
    .default('0')
    .transform((v) => v === '1' || v === 'true'),
  DATABASE_POOL_SIZE: z.coerce.number().int().min(1).max(200).default(10),
  // --- hardening: outbound repository URLs, read budgets, auth abuse, diff limits ---
  /** Allow repository hosts that resolve to loopback, private, link-local, multicast or unspecified addresses. */
  SVC_REPO_ALLOW_LOCAL_NETWORKS: z
    .enum(['0', '1', 'true', 'false'])
    .default('0')
    .transform((v) => v === '1' || v === 'true'),
  /** Comma-separated host patterns (`example.com`, `*.example.com`); when set, only these hosts. */
  SVC_REPO_ALLOWED_HOSTS: z.string().default(''),
  /** Comma-separated host patterns always refused. */
  SVC_REPO_BLOCKED_HOSTS: z.string().default(''),
  /** Send stored repository credentials over plain http:// (off: https only). */
  SVC_REPO_ALLOW_HTTP_CREDENTIALS: z
    .enum(['0', '1', 'true', 'false'])
    .default('0')
    .transform((v) => v === '1' || v === 'true'),
  /** Budget of the `ls-remote` that checks a new project's remote repository answers. */
  SVC_REPO_CHECK_TIMEOUT_MS: z.coerce.number().int().min(100).max(600_000).default(10_000),
  /** Budget of the refresh a read of an open CR makes; past it the stored CR is served. */
  SVC_REFRESH_TIMEOUT_MS: z.coerce.number().int().min(1).max(600_000).default(1500),
  /** Budget of a diff or merge preview; past it 504. */
  SVC_DIFF_TIMEOUT_MS: z.coerce.number().int().min(1).max(600_000).default(30_000),
  /** Longest wait for the per-base merge lock (close, reopen, merge); past it 503 with Retry-After. */
  SVC_MERGE_LOCK_WAIT_MS: z.coerce.number().int().min(1).max(600_000).default(10_000),
  /** Failed authentications allowed per client address per window; then 429. */
  SVC_AUTH_FAILURE_LIMIT: z.coerce.number().int().min(1).default(60),
  SVC_AUTH_FAILURE_WINDOW_S: z.coerce.number().int().min(1).max(86_400).default(60),
  /**
   * Reverse proxies whose `X-Forwarded-For` names the client (comma-separated CIDRs or
   * addresses). Empty: the TCP peer is the client and the header is ignored.
   */
  SVC_TRUST_PROXY: z
    .string()
    .default('')
    .superRefine((v, ctx) => {
      try {
        parseCidrList(v);
      } catch (err) {
        ctx.addIssue({ code: 'custom', message: (err as Error).message });
      }
    }),
  /**
   * `/metrics` on the public listener answers only this Bearer token (unset: 401 there).
   * Long and random: it is compared, never rate limited by account.
   */
  SVC_METRICS_TOKEN: z.string().min(32, 'at least 32 characters').max(512).regex(/^[\x21-\x7e]+$/, 'printable ASCII without spaces').optional(),
  /**
   * A listener of its own serving `GET /metrics` without a credential: `host:port`
   * (`[v6]:port`), loopback by default; `off`: none.
   */
  SVC_METRICS_ADDR: z
    .string()
    .default('127.0.0.1:9464')
    .refine((v) => v === 'off' || /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+):\d{1,5}$/.test(v) && Number(v.slice(v.lastIndexOf(':') + 1)) <= 65535, 'host:port, [v6]:port or off'),
  /** Diff limits (GitHub's shape): per-file and total patch bytes and lines. */
  SVC_DIFF_MAX_FILE_BYTES: z.coerce.number().int().min(1).default(500_000),
  SVC_DIFF_MAX_FILE_LINES: z.coerce.number().int().min(1).default(20_000),
  SVC_DIFF_MAX_TOTAL_BYTES: z.coerce.number().int().min(1).default(5_000_000),
  SVC_DIFF_MAX_TOTAL_LINES: z.coerce.number().int().min(1).default(100_000),
  SVC_DIFF_MAX_FILES: z.coerce.number().int().min(1).default(3000),
  /** Merge jobs one worker process runs at once (capped by the pool size). */
  SVC_MERGE_CONCURRENCY: z.coerce.number().int().min(1).max(64).default(4),
  /** Check runs at once per server (docs/checks.md); each is a sandbox. */
  SVC_CHECKS_CONCURRENCY: z.coerce.number().int().min(1).max(64).default(2),
  /** How often open CRs with checks (or a pending merge-when-green) re-read their tips. */
  SVC_CHECKS_REFRESH_MS: z.coerce.number().int().min(50).max(600_000).default(5000),
  /** A check's log is kept up to this size (its head and tail beyond). */
  SVC_CHECKS_LOG_MAX_BYTES: z.coerce.number().int().min(1024).max(64 * 1024 * 1024).default(1024 * 1024),
  // --- end hardening ---
  // --- managed repositories ---
  /** Root of the bare repositories this server hosts (default `<data dir>/repos`); a shared volume in scale-out. */
  SVC_REPOS_DIR: z.string().min(1).optional(),
  /** Largest push (request body, after decompression) smart HTTP accepts, in bytes. */
  SVC_GIT_MAX_PUSH_BYTES: z.coerce.number().int().min(1024).default(2 * 1024 ** 3),
  /** A smart-HTTP transfer that moves no byte for this long is cut (seconds). */
  SVC_GIT_IDLE_TIMEOUT_SECONDS: z.coerce.number().min(0.1).max(86_400).default(120),
  // --- ops: chat channels ---
  /** Accept http:// channel webhooks (tests, a receiver on the same host). Off: https only. */
  SVC_CHANNELS_ALLOW_HTTP: z
    .enum(['0', '1', 'true', 'false'])
    .default('0')
    .transform((v) => v === '1' || v === 'true'),
  /** Run the channels subscriber in this process's worker role (default on; one process delivers at a time). */
  SVC_CHANNELS_DISPATCH: z
    .enum(['0', '1', 'true', 'false'])
    .default('1')
    .transform((v) => v === '1' || v === 'true'),
  // --- end ops ---

  // --- Sessions and sandboxes (docs/sessions.md) ---
  /** Where sandboxes run; unset: `bwrap`. `process` (no isolation) only when chosen here. */
  SVC_SANDBOX_PROVIDER: z.enum(['process', 'bwrap', 'docker', 'kubernetes']).optional(),
  /** `1`: the process provider keeps running sessions after a second account exists (it isolates nothing). */
  SVC_ALLOW_UNISOLATED: z.enum(['0', '1', 'true', 'false']).default('0').transform((v) => v === '1' || v === 'true'),
  /** Concurrent live sessions (provisioning + running) per account, unless the account overrides it. */
  SVC_SESSION_CAP: z.coerce.number().int().min(0).max(100_000).default(5),
  /** A running session with no proxied request or prompt for this long is stopped (hibernated). */
  SVC_SESSION_IDLE_MINUTES: z.coerce.number().positive().max(525_600).default(15),
  /** Pause and resume: the most a stop or checkpoint saves of a sandbox's uncommitted and untracked files (bytes). */
  SVC_SESSION_WIP_MAX_BYTES: z.coerce.number().int().min(0).max(16 * 1024 ** 3).default(100 * 1024 ** 2),
  /** Pause and resume: a sandbox's daemon checkpoints changes at most this often (seconds). */
  SVC_SESSION_WIP_CHECKPOINT_SECONDS: z.coerce.number().positive().max(86_400).default(60),
  /** Provisioning that has not reached `running` after this long fails. */
  SVC_SESSION_PROVISION_TIMEOUT_SECONDS: z.coerce.number().positive().max(3600).default(120),
  /** Prepared sandboxes per server, over every project's `[sandbox] pool` (docs/sessions.md "Pool"); 0 turns the pool off. */
  SVC_SANDBOX_POOL_MAX: z.coerce.number().int().min(0).max(1000).default(2),
  // --- what one sandbox may use (docs/hardening.md "Availability") ---
  /** Per sandbox and per socket the server opens for it (gateway, egress): open connections; one more is closed on accept. */
  SVC_SANDBOX_MAX_CONNECTIONS: z.coerce.number().int().min(1).max(100_000).default(128),
  /** Per sandbox: requests in flight through its gateway; one more is answered 429. */
  SVC_SANDBOX_MAX_REQUESTS: z.coerce.number().int().min(1).max(10_000).default(16),
  /** Per sandbox: requests per second through its gateway (bursts of twice that); more are answered 429 with Retry-After. */
  SVC_SANDBOX_MAX_REQUEST_RATE: z.coerce.number().positive().max(100_000).default(20),
  /** File descriptors kept from sandboxes' connections for the public listener, PostgreSQL and child processes; default a quarter of RLIMIT_NOFILE (at least 256, at most half). */
  SVC_FD_RESERVE: z.coerce.number().int().min(0).optional(),
  /** RLIMIT_NOFILE of every process in a sandbox (bwrap, process, docker). */
  SVC_SANDBOX_MAX_NOFILE: z.coerce.number().int().min(64).max(1_048_576).default(4096),
  /** RLIMIT_NPROC of a sandbox's processes (bwrap, process, docker; counted per user by the kernel, so generous: the pids limit is the bound per sandbox). */
  SVC_SANDBOX_MAX_NPROC: z.coerce.number().int().min(16).max(4_194_304).default(4096),
  /** Memory of one sandbox in MiB: the manifest's `memory_mb` is capped to it, and it is the default (docker, kubernetes, bwrap with a cgroup). */
  SVC_SANDBOX_MAX_MEMORY_MB: z.coerce.number().int().min(64).max(1_048_576).default(4096),
  /** CPUs of one sandbox: the manifest's `cpus` is capped to it, and it is the default (docker, kubernetes, bwrap with a cgroup; else nice 19). */
  SVC_SANDBOX_MAX_CPUS: z.coerce.number().positive().max(1024).default(2),
  /** Processes (pids) of one sandbox (docker, kubernetes, bwrap with a cgroup). */
  SVC_SANDBOX_MAX_PIDS: z.coerce.number().int().min(16).max(4_194_304).default(1024),
  /** The agent runtime the sandbox daemon launches (process, bwrap: a host path; docker: a path in the image); default opencode. */
  SVC_AGENT_RUNTIME: z.string().min(1).optional(),
  /** The API base (ending in /v1) as sandboxes reach it; default SVC_PUBLIC_URL/v1, else this server on 127.0.0.1. */
  SVC_SANDBOX_API_URL: z.string().url().optional(),
  /** GitHub's REST API base for branch cuts on github.com repositories. */
  SVC_GITHUB_API_URL: z.string().url().default('https://api.github.com'),
  // --- the model gateway (docs/models.md) ---
  /** The OpenAI-compatible upstream sessions' agents reach through `/v1/llm` (a hosted provider, LiteLLM, OpenRouter, vLLM, Ollama). */
  SVC_LLM_UPSTREAM_URL: z
    .string()
    .url()
    .refine((v) => /^https?:\/\//i.test(v), 'must be an http:// or https:// URL')
    .optional(),
  /** The upstream's API key: sent upstream by the gateway only, never into a sandbox. */
  SVC_LLM_UPSTREAM_KEY: z.string().min(1).optional(),
  /** The model sessions use when neither the session nor the manifest names one. */
  SVC_LLM_MODEL: z.string().min(1).max(200).optional(),
  /** Comma-separated models sessions may use through the gateway (default: SVC_LLM_MODEL alone). */
  SVC_LLM_MODELS: z.string().default(''),
  /** Tokens (input + output) one session may spend through the gateway; 0: no limit. */
  SVC_LLM_SESSION_TOKEN_BUDGET: z.coerce.number().int().min(0).default(0),
  /** Tokens one account's sessions may spend through the gateway per window; 0: no limit. */
  SVC_LLM_ACCOUNT_TOKEN_BUDGET: z.coerce.number().int().min(0).default(0),
  /** The account budget's period, in hours: fixed windows aligned to the Unix epoch (UTC). */
  SVC_LLM_ACCOUNT_BUDGET_HOURS: z.coerce.number().positive().max(8784).default(720),
  /**
   * The largest budget a person may set on a project or account (docs/models.md "Budgets a
   * person sets"), per day or month alike: tokens, and money in the prices' currency. A
   * budget above a cap lowered later is held to it. 0: no cap.
   */
  SVC_LLM_BUDGET_MAX_TOKENS: z.coerce.number().int().min(0).default(0),
  SVC_LLM_BUDGET_MAX_MONEY: z.coerce.number().finite().min(0).max(1e9).default(0),
  /** Model calls one session may have in flight through the gateway (the runtime's title and main calls run together). */
  SVC_LLM_SESSION_CONCURRENCY: z.coerce.number().int().min(1).max(64).default(4),
  /** How long one model call may take upstream; a reservation a dead process left expires after it, charged in full. */
  SVC_LLM_UPSTREAM_TIMEOUT_MS: z.coerce.number().int().min(100).max(3_600_000).default(600_000),
  /**
   * What each model costs through the gateway (docs/models.md "Cost"): JSON
   * `{"currency":"USD","models":{"<model>":{"input":3,"output":15}}}`, prices per million
   * tokens. Every usage row keeps the price it was charged at; a model left out is counted
   * in tokens and flagged unpriced.
   */
  SVC_LLM_PRICES: z
    .string()
    .optional()
    .transform((v, ctx) => {
      if (v === undefined) return null;
      let json: unknown;
      try {
        json = JSON.parse(v);
      } catch (err) {
        ctx.addIssue({ code: 'custom', message: `not JSON (${(err as Error).message})` });
        return z.NEVER;
      }
      const parsed = LlmPricesSchema.safeParse(json);
      if (!parsed.success) {
        for (const i of parsed.error.issues) ctx.addIssue({ code: 'custom', message: `${i.path.length ? `${i.path.join('.')}: ` : ''}${i.message}` });
        return z.NEVER;
      }
      return parsed.data;
    }),
  // --- manifest, triggers, apps (docs/manifest.md) ---
  /** How often each worker looks for due triggers. */
  SVC_SCHEDULER_INTERVAL_MS: z.coerce.number().int().min(50).max(600_000).default(5000),
  /** Off: this worker fires no triggers (e.g. to pin the scheduler to some workers). */
  SVC_SCHEDULER: z.enum(['0', '1', 'true', 'false']).default('1').transform((v) => v === '1' || v === 'true'),
  /**
   * Apps from [[apps]] run as child processes of a worker, on its host, NOT in a sandbox:
   * anyone who can merge into a default branch runs commands there. `0` refuses deploys
   * (recorded as failed) on installs where that is not acceptable.
   */
  SVC_APPS: z.enum(['0', '1', 'true', 'false']).default('1').transform((v) => v === '1' || v === 'true'),
  /**
   * Apps are served by the API at `<app>-<first 12 hex of the project id>.<SVC_APPS_DOMAIN>`
   * (a wildcard DNS name pointing at this server), each an origin of its own; default
   * SVC_PREVIEW_DOMAIN, and on a loopback install `<app>-<id>.localhost:<PORT>`.
   */
  SVC_APPS_DOMAIN: z
    .string()
    .regex(/^(?=.{1,253}$)([a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?\.)*[a-z0-9]([a-z0-9-]{0,61}[a-z0-9])?(:\d{1,5})?$/i, 'must be a DNS name (optionally :port)')
    .optional(),
  /** How long a new app version has to answer its health path before the deploy fails. */
  SVC_APP_HEALTH_TIMEOUT_MS: z.coerce.number().int().min(100).max(3_600_000).default(60_000),

  // --- Sandbox providers bwrap, docker, kubernetes (docs/sandbox-providers.md) ---
  /** docker / kubernetes: the default sandbox image (ops/sandbox-image.sh builds svc-sandbox:local). */
  SVC_SANDBOX_IMAGE: z.string().min(1).default('svc-sandbox:local'),
  /** kubernetes: the namespace of sandbox pods, services and secrets (the server needs RBAC there). */
  SVC_K8S_NAMESPACE: z
    .string()
    .regex(/^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/, 'must be a Kubernetes namespace name')
    .default('svc-sandboxes'),
  /** kubernetes: the cluster's DNS suffix, for the sandbox Service URL. */
  SVC_K8S_CLUSTER_DOMAIN: z.string().min(1).default('cluster.local'),
  /** kubernetes: imagePullPolicy of sandbox pods. */
  SVC_K8S_IMAGE_PULL_POLICY: z.enum(['Always', 'IfNotPresent', 'Never']).default('IfNotPresent'),
});

export type Env = z.infer<typeof schema>;

export interface Config extends Env {
  dataDir: string;
}

const bareDomain = (d: string | undefined) => d?.toLowerCase().replace(/:\d+$/, '');

/**
 * A public (non-loopback) server needs a preview domain, and neither it nor the apps'
 * domain may hold the dashboard's host: code a tenant wrote, served under a domain that
 * holds the dashboard, could set cookies the dashboard's host receives.
 */
function previewConfigProblems(env: Env): string[] {
  const loopback = (h: string) => h === 'localhost' || h.endsWith('.localhost') || /^127\.\d+\.\d+\.\d+$/.test(h) || h === '[::1]';
  const pub = env.SVC_PUBLIC_URL ? new URL(env.SVC_PUBLIC_URL).hostname.toLowerCase() : null;
  const problems: string[] = [];
  if (pub && !loopback(pub) && !env.SVC_PREVIEW_DOMAIN) {
    problems.push('SVC_PREVIEW_DOMAIN: required when SVC_PUBLIC_URL is not a loopback address (previews need an origin of their own)');
  }
  for (const name of ['SVC_PREVIEW_DOMAIN', 'SVC_APPS_DOMAIN'] as const) {
    const domain = bareDomain(env[name]);
    if (domain && pub && (pub === domain || pub.endsWith(`.${domain}`))) {
      problems.push(`${name}: must not hold the dashboard's host ${pub} (SVC_PUBLIC_URL); give ${name === 'SVC_APPS_DOMAIN' ? 'apps' : 'previews'} a domain of their own`);
    }
  }
  return problems;
}

/** The last two labels: the registrable domain as far as a server without the public suffix list can tell. */
const siteOf = (host: string) => host.split('.').slice(-2).join('.');

/**
 * What the server starts with but warns about: the dashboard sharing a site with apps or
 * previews (they cannot set its `__Host-` cookies, but they are same-site: SameSite=Lax
 * cookies go along on their requests to it), and SVC_APPS_HOST, no longer read.
 */
export function configWarnings(config: Config, env: NodeJS.ProcessEnv = process.env): string[] {
  const out: string[] = [];
  const pub = config.SVC_PUBLIC_URL ? new URL(config.SVC_PUBLIC_URL).hostname.toLowerCase() : null;
  for (const name of ['SVC_PREVIEW_DOMAIN', 'SVC_APPS_DOMAIN'] as const) {
    const domain = bareDomain(config[name]);
    if (pub && domain && pub.includes('.') && !/^[\d.]+$/.test(pub) && siteOf(pub) === siteOf(domain)) {
      out.push(`${name} (${domain}) and SVC_PUBLIC_URL (${pub}) share the site ${siteOf(pub)}: a domain of its own for tenants' code is safer (docs/operations.md)`);
    }
  }
  if (config.SVC_LLM_PRICES) {
    // A model offered without a price is counted in tokens only: said once at start, not found in a bill later.
    const offered = [config.SVC_LLM_MODEL, ...config.SVC_LLM_MODELS.split(',')].map((m) => m?.trim()).filter((m): m is string => !!m);
    const unpriced = [...new Set(offered)].filter((m) => !Object.hasOwn(config.SVC_LLM_PRICES!.models, m));
    if (unpriced.length) out.push(`SVC_LLM_PRICES has no price for ${unpriced.join(', ')}: their calls are counted in tokens only, flagged unpriced (docs/models.md "Cost")`);
  }
  if (env.SVC_APPS_HOST) out.push('SVC_APPS_HOST is no longer read: apps are served by the server at <app>-<project id>.<SVC_APPS_DOMAIN> (docs/manifest.md "Apps")');
  return out;
}

export class ConfigError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n${problems.map((p) => `  ${p}`).join('\n')}`);
    this.name = 'ConfigError';
  }
}

export function loadConfig(env: NodeJS.ProcessEnv = process.env): Config {
  // An empty variable means unset (compose files and shells often pass `VAR=`).
  const present = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v !== ''));
  const parsed = schema.safeParse(present);
  if (!parsed.success) {
    throw new ConfigError(parsed.error.issues.map((i) => `${i.path.join('.') || '(env)'}: ${i.message}`));
  }
  const previews = previewConfigProblems(parsed.data);
  if (previews.length) throw new ConfigError(previews);
  return { ...parsed.data, dataDir: path.resolve(parsed.data.SVC_DATA_DIR) };
}
