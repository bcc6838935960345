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
  // --- ops (issue 14): chat channels ---
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
