import { z } from 'zod';
import { isRepoPath } from '../repo-path.js';
import { CronError, parseCron } from './cron.js';
import { EgressList } from './egress.js';

/**
 * `svc.toml`, validated. Unknown keys are not errors (an older server must accept a newer
 * manifest); they come back as warnings. See docs/manifest.md.
 */
export const ENV_NAME = /^[A-Z_][A-Z0-9_]*$/;
export const SLUG = /^[a-z0-9][a-z0-9-]{0,62}$/;
export const RESERVED_PREFIX = 'SVC_';

const envName = z.string().regex(ENV_NAME, 'must match ^[A-Z_][A-Z0-9_]*$');
/** `["A", "B"]` or `{ A = "what it is for" }`: normalised to a list of {name, description}. */
const envSpec = z
  .union([z.array(envName), z.record(envName, z.string())])
  .default([])
  .transform((v) => (Array.isArray(v) ? v.map((name) => ({ name, description: '' })) : Object.entries(v).map(([name, description]) => ({ name, description }))));

const repoPath = z.string().refine((p) => isRepoPath(p, 500), 'a relative path inside the repository (no leading /, no empty, . or .. part)');

/** A Docker image reference (`registry/name:tag`, `name@sha256:...`): never an option, no spaces. */
const IMAGE_REF = /^[A-Za-z0-9][A-Za-z0-9._\-/:@]*$/;

const cron = z.string().superRefine((s, ctx) => {
  try {
    parseCron(s);
  } catch (e) {
    ctx.addIssue({ code: 'custom', message: e instanceof CronError ? `invalid schedule: ${e.message}` : 'invalid schedule' });
  }
});

export const TriggerSpec = z.object({
  slug: z.string().regex(SLUG, 'lowercase letters, digits and dashes, at most 63'),
  schedule: cron,
  prompt: z.string().trim().min(1, 'must not be empty').max(100_000),
  agent: z.string().min(1).max(100).optional(),
  model: z.string().min(1).max(200).optional(),
  enabled: z.boolean().default(true),
});

/**
 * The longest app name served at `<name>-<12 hex>` within one DNS label (63); a longer one
 * gets a hashed label (the manifest warns).
 */
export const APP_LABEL_NAME_MAX = 50;

export const AppSpec = z.object({
  name: z.string().regex(SLUG, 'lowercase letters, digits and dashes, at most 63'),
  command: z.string().trim().min(1, 'must not be empty').max(10_000),
  port: z.number().int().min(1).max(65535),
  env: z.record(envName, z.string()).optional(),
  health_path: z.string().regex(/^\/[\x21-\x7e]*$/, 'must start with / and hold no spaces').optional(),
  /** Anyone may open the app; absent or false: the project's members only (through the dashboard). */
  public: z.boolean().optional(),
});

/** `[[checks]]`: a command run on every CR's merge result (docs/checks.md). */
export const CheckSpec = z.object({
  name: z.string().regex(/^[A-Za-z0-9][A-Za-z0-9._\/-]{0,99}$/, 'letters, digits and . _ / -, at most 100'),
  run: z.string().trim().min(1, 'must not be empty').max(10_000),
  timeout_minutes: z.number().int().min(1).max(360).default(15),
  /** Project secrets this check may see (default none). */
  secrets: z.array(envName).default([]),
});

/** `[review]`: what merge-when-green also waits for (docs/checks.md). */
export const ReviewSpec = z.object({
  required_statuses: z.array(z.string().min(1).max(255)).default([]),
  send_failures_to_agent: z.boolean().default(false),
  max_agent_rounds: z.number().int().min(0).max(100).default(3),
});

/** `[merge_queue]`: merge-when-green goes through a queue per base branch (docs/merge-queue.md). */
export const MergeQueueSpec = z.object({
  enabled: z.boolean().default(false),
  /** How many speculative merge results are checked at once, each on the one before it. */
  max_batch: z.number().int().min(1).max(32).default(4),
});

export const ManifestSchema = z
  .object({
    agent: z
      .object({
        config_dir: z.string().min(1).max(200).regex(/^(?!\/)(?!.*(^|\/)\.\.(\/|$))[^\x00-\x1f]+$/, 'a relative path inside the repository').default('.svc/agent'),
        /** The project's model (docs/models.md): a bare name goes through the gateway, `provider/model` to a runtime provider. */
        model: z.string().min(1).max(200).regex(/^[A-Za-z0-9][A-Za-z0-9._:\/@+-]*$/, 'a model name: letters, digits and . _ : / @ + -').optional(),
      })
      .default({ config_dir: '.svc/agent' }),
    env: z.object({ required: envSpec, optional: envSpec }).default({ required: [], optional: [] }),
    sandbox: z
      .object({
        image: z.string().max(500).regex(IMAGE_REF, 'an image reference: name[:tag][@digest]').optional(),
        dockerfile: repoPath.optional(),
        cpus: z.number().min(0.01).max(64).optional(),
        memory_mb: z.number().int().min(64).max(262_144).optional(),
        idle_timeout_minutes: z.number().int().min(4).max(10_080).optional(),
        /** Prepared sandboxes kept booted for the project (docs/sessions.md "Pool"), capped per server by SVC_SANDBOX_POOL_MAX. */
        pool: z.number().int().min(0).max(50).optional(),
        /** Where the sandbox may connect through the egress proxy (domain/manifest/egress.ts); absent: the public internet. */
        egress: EgressList.optional(),
      })
      .default({}),
    triggers: z.array(TriggerSpec).default([]),
    apps: z.array(AppSpec).default([]),
    checks: z.array(CheckSpec).default([]),
    review: ReviewSpec.default({ required_statuses: [], send_failures_to_agent: false, max_agent_rounds: 3 }),
    merge_queue: MergeQueueSpec.default({ enabled: false, max_batch: 4 }),
  })
  .superRefine((m, ctx) => {
    const dup = (items: string[], key: string, what: string) => {
      const seen = new Set<string>();
      items.forEach((v, i) => {
        if (seen.has(v)) ctx.addIssue({ code: 'custom', path: [key, i], message: `duplicate ${what} '${v}'` });
        seen.add(v);
      });
    };
    dup(m.triggers.map((t) => t.slug), 'triggers', 'trigger slug');
    dup(m.apps.map((a) => a.name), 'apps', 'app name');
    dup(m.checks.map((c) => c.name), 'checks', 'check name');
    dup(m.review.required_statuses, 'review', 'required status');
    const checkNames = new Set(m.checks.map((c) => c.name));
    m.review.required_statuses.forEach((s, i) => {
      if (checkNames.has(s)) ctx.addIssue({ code: 'custom', path: ['review', 'required_statuses', i], message: `'${s}' is a check's name; checks are required already` });
    });
  });

export type Manifest = z.infer<typeof ManifestSchema>;
export type TriggerSpec = z.infer<typeof TriggerSpec>;
export type AppSpec = z.infer<typeof AppSpec>;
export type CheckSpec = z.infer<typeof CheckSpec>;
export type ReviewSpec = z.infer<typeof ReviewSpec>;
export type MergeQueueSpec = z.infer<typeof MergeQueueSpec>;

/** Known keys per table, for the unknown-key warnings. */
export const KNOWN_KEYS: Record<string, string[]> = {
  '': ['agent', 'env', 'sandbox', 'triggers', 'apps', 'checks', 'review', 'merge_queue'],
  agent: ['config_dir', 'model'],
  env: ['required', 'optional'],
  sandbox: ['image', 'dockerfile', 'cpus', 'memory_mb', 'idle_timeout_minutes', 'egress', 'pool'],
  triggers: ['slug', 'schedule', 'prompt', 'agent', 'model', 'enabled'],
  apps: ['name', 'command', 'port', 'env', 'health_path', 'public'],
  checks: ['name', 'run', 'timeout_minutes', 'secrets'],
  review: ['required_statuses', 'send_failures_to_agent', 'max_agent_rounds'],
  merge_queue: ['enabled', 'max_batch'],
};
