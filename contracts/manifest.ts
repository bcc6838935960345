import { z } from 'zod';
import { IssueSchema, time } from './common.js';
import { ChangeRequestSchema } from './change-requests.js';
import { SessionSchema } from './sessions.js';

/** The manifest (svc.toml), secrets, triggers and apps (contracts.md "Secrets, manifest, triggers, apps"; docs/manifest.md). */

const envEntry = z.strictObject({ name: z.string(), description: z.string() });

/** The manifest in force, as the server parsed it (domain/manifest/schema.ts, defaults filled). */
export const ManifestSchema = z.strictObject({
  agent: z.strictObject({ config_dir: z.string() }),
  env: z.strictObject({ required: z.array(envEntry), optional: z.array(envEntry) }),
  sandbox: z.strictObject({
    image: z.string().optional(),
    dockerfile: z.string().optional(),
    cpus: z.number().optional(),
    memory_mb: z.number().int().optional(),
    idle_timeout_minutes: z.number().int().optional(),
    pool: z.number().int().optional(),
  }),
  triggers: z.array(
    z.strictObject({ slug: z.string(), schedule: z.string(), prompt: z.string(), agent: z.string().optional(), model: z.string().optional(), enabled: z.boolean() }),
  ),
  apps: z.array(
    z.strictObject({ name: z.string(), command: z.string(), port: z.number().int(), env: z.record(z.string(), z.string()).optional(), health_path: z.string().optional(), public: z.boolean().optional() }),
  ),
  checks: z.array(z.strictObject({ name: z.string(), run: z.string(), timeout_minutes: z.number().int(), secrets: z.array(z.string()) })).optional(),
  review: z.strictObject({ required_statuses: z.array(z.string()), send_failures_to_agent: z.boolean(), max_agent_rounds: z.number().int() }).optional(),
  merge_queue: z.strictObject({ enabled: z.boolean(), max_batch: z.number().int() }).optional(),
});

/** `GET .../manifest`: the last valid manifest, the commit last read, its errors and warnings. */
export const ManifestViewSchema = z.strictObject({
  manifest: ManifestSchema.nullable(),
  source_sha: z.string().nullable(),
  errors: z.array(IssueSchema),
  warnings: z.array(IssueSchema),
});

export const PutSecretBody = z.strictObject({ value: z.string() });
export const PatchSecretsBody = z.strictObject({
  set: z.record(z.string(), z.string()).optional(),
  unset: z.array(z.string()).optional(),
});

/** Secret names (never values), the manifest's [env] spec and what is missing. */
export const SecretsListingSchema = z.strictObject({
  secrets: z.array(z.strictObject({ name: z.string(), updated_at: time })),
  env: z.strictObject({ required: z.array(envEntry), optional: z.array(envEntry), missing: z.array(z.string()) }),
  revision: z.number().int().min(0),
});
export type SecretsListing = z.infer<typeof SecretsListingSchema>;

export const TriggerSchema = z.strictObject({
  slug: z.string(),
  schedule: z.string(),
  prompt: z.string(),
  agent: z.string().nullable(),
  model: z.string().nullable(),
  enabled: z.boolean(),
  last_fired_at: time.nullable(),
  next_fire_at: time.nullable(),
});
export type Trigger = z.infer<typeof TriggerSchema>;

export const TriggerFireSchema = z.strictObject({ tick: time, kind: z.string(), outcome: z.string().nullable(), session_id: z.string().nullable(), fired_at: time });
/** One trigger with its recent fires. */
export const TriggerDetailSchema = TriggerSchema.extend({ fires: z.array(TriggerFireSchema) });
export type TriggerDetail = z.infer<typeof TriggerDetailSchema>;

export const TriggerList = z.strictObject({ triggers: z.array(TriggerSchema) });
export const OneTrigger = z.strictObject({ trigger: TriggerDetailSchema });
/** `POST .../triggers/:slug/fire` (202): the session it spawned. */
export const TriggerFired = z.strictObject({ session: SessionSchema });
/** `POST .../triggers/:slug/enable|disable` (201): the CR that edits svc.toml. */
export const TriggerProposal = z.strictObject({ change_request: ChangeRequestSchema });

export const AppSchema = z.strictObject({
  name: z.string(),
  status: z.string(),
  commit_sha: z.string().nullable(),
  /** The app's own origin (`<app>-<project id>.<apps domain>`), served by the server; null until a version is live. */
  url: z.string().nullable(),
  /** Anyone may open it (`public = true`); else the project's members, through the dashboard. */
  public: z.boolean(),
  manifest_hash: z.string(),
  deployed_at: time.nullable(),
  last_error: z.string().nullable(),
});
export type App = z.infer<typeof AppSchema>;

export const AppDeploySchema = z.strictObject({
  deploy_id: z.uuid(),
  commit_sha: z.string(),
  manifest_hash: z.string(),
  status: z.string(),
  url: z.string().nullable(),
  error: z.string().nullable(),
  started_at: time,
  finished_at: time.nullable(),
});
/** One app with its recent deploys. */
export const AppDetailSchema = AppSchema.extend({ deploys: z.array(AppDeploySchema) });
export type AppDetail = z.infer<typeof AppDetailSchema>;

export const AppList = z.strictObject({ apps: z.array(AppSchema) });
export const OneApp = z.strictObject({ app: AppDetailSchema });
