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

  // --- Sessions and sandboxes (issue 10, docs/sessions.md) ---
  /** Where sandboxes run; unset: `process` (the registry may prefer bwrap when installed). */
  SVC_SANDBOX_PROVIDER: z.enum(['process', 'bwrap', 'docker', 'kubernetes']).optional(),
  /** Concurrent live sessions (provisioning + running) per account, unless the account overrides it. */
  SVC_SESSION_CAP: z.coerce.number().int().min(0).max(100_000).default(5),
  /** A running session with no proxied request or prompt for this long is stopped (hibernated). */
  SVC_SESSION_IDLE_MINUTES: z.coerce.number().positive().max(525_600).default(15),
  /** Provisioning that has not reached `running` after this long fails. */
  SVC_SESSION_PROVISION_TIMEOUT_SECONDS: z.coerce.number().positive().max(3600).default(120),
  /** The agent runtime the sandbox daemon launches (`process` provider); default opencode from node_modules. */
  SVC_AGENT_RUNTIME: z.string().min(1).optional(),
  /** The API base (ending in /v1) as sandboxes reach it; default SVC_PUBLIC_URL/v1, else this server on 127.0.0.1. */
  SVC_SANDBOX_API_URL: z.string().url().optional(),
  /** GitHub's REST API base for branch cuts on github.com repositories. */
  SVC_GITHUB_API_URL: z.string().url().default('https://api.github.com'),
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
