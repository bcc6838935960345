import path from 'node:path';
import { z } from 'zod';

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
  /** Public base URL of this server, used in links (CR URLs, dashboard). */
  SVC_PUBLIC_URL: z.string().url().optional(),
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
  // --- hardening (issue 15): outbound repository URLs, read budgets, auth abuse, diff limits ---
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
  /** Budget of the refresh a read of an open CR makes; past it the stored CR is served. */
  SVC_REFRESH_TIMEOUT_MS: z.coerce.number().int().min(1).max(600_000).default(1500),
  /** Budget of a diff or merge preview; past it 504. */
  SVC_DIFF_TIMEOUT_MS: z.coerce.number().int().min(1).max(600_000).default(30_000),
  /** Longest wait for the per-base merge lock (close, reopen, merge); past it 503 with Retry-After. */
  SVC_MERGE_LOCK_WAIT_MS: z.coerce.number().int().min(1).max(600_000).default(10_000),
  /** Failed authentications allowed per client address per window; then 429. */
  SVC_AUTH_FAILURE_LIMIT: z.coerce.number().int().min(1).default(60),
  SVC_AUTH_FAILURE_WINDOW_S: z.coerce.number().int().min(1).max(86_400).default(60),
  /** Diff limits (GitHub's shape): per-file and total patch bytes and lines. */
  SVC_DIFF_MAX_FILE_BYTES: z.coerce.number().int().min(1).default(500_000),
  SVC_DIFF_MAX_FILE_LINES: z.coerce.number().int().min(1).default(20_000),
  SVC_DIFF_MAX_TOTAL_BYTES: z.coerce.number().int().min(1).default(5_000_000),
  SVC_DIFF_MAX_TOTAL_LINES: z.coerce.number().int().min(1).default(100_000),
  SVC_DIFF_MAX_FILES: z.coerce.number().int().min(1).default(3000),
  /** Merge jobs one worker process runs at once (capped by the pool size). */
  SVC_MERGE_CONCURRENCY: z.coerce.number().int().min(1).max(64).default(4),
  // --- end hardening ---
});

export type Env = z.infer<typeof schema>;

export interface Config extends Env {
  dataDir: string;
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
  return { ...parsed.data, dataDir: path.resolve(parsed.data.SVC_DATA_DIR) };
}
