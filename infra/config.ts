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
  // --- manifest, triggers, apps (issue 12; docs/manifest.md) ---
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
  /** Host name put in app URLs (apps listen on a free port of the worker's host). */
  SVC_APPS_HOST: z.string().min(1).max(253).regex(/^[A-Za-z0-9.:\[\]-]+$/).default('127.0.0.1'),
  /** How long a new app version has to answer its health path before the deploy fails. */
  SVC_APP_HEALTH_TIMEOUT_MS: z.coerce.number().int().min(100).max(3_600_000).default(60_000),
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
