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

  // --- Sandbox providers bwrap, docker, kubernetes (issue 10, docs/sandbox-providers.md) ---
  /** docker / kubernetes: the default sandbox image (ops/sandbox-image.sh builds svc-sandbox:local). */
  SVC_SANDBOX_IMAGE: z.string().min(1).default('svc-sandbox:local'),
  /** docker: `host` (sandboxes share the host's loopback, like bwrap), `bridge`, or a network name. */
  SVC_DOCKER_NETWORK: z.string().min(1).default('host'),
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
