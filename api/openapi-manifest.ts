import { z } from 'zod';
import type { Op } from './openapi.js';
import { ChangeRequestSchema } from './schemas.js';

/** OpenAPI entries of the manifest, secrets, triggers and apps routes (issue 12). */
const P = '/v1/projects/{projectId}';
const issue = z.object({ path: z.string(), message: z.string() });
const envEntry = z.object({ name: z.string(), description: z.string() });
const listing = z.object({
  secrets: z.array(z.object({ name: z.string(), updated_at: z.string() })),
  env: z.object({ required: z.array(envEntry), optional: z.array(envEntry), missing: z.array(z.string()) }),
  revision: z.number(),
});
const trigger = z.object({
  slug: z.string(), schedule: z.string(), prompt: z.string(), agent: z.string().nullable(), model: z.string().nullable(),
  enabled: z.boolean(), last_fired_at: z.string().nullable(), next_fire_at: z.string().nullable(),
});
const app = z.object({
  name: z.string(), status: z.string(), commit_sha: z.string().nullable(), url: z.string().nullable(),
  manifest_hash: z.string(), deployed_at: z.string().nullable(), last_error: z.string().nullable(),
});
const empty = z.object({});
const cr = z.object({ change_request: ChangeRequestSchema });

export function manifestOps(): Record<string, Record<string, Op>> {
  return {
    [`${P}/manifest`]: { get: { summary: 'The svc.toml in force (last valid), the commit last read, its errors and warnings.', ok: { status: 200, schema: z.object({ manifest: z.object({}).nullable(), source_sha: z.string().nullable(), errors: z.array(issue), warnings: z.array(issue) }) }, errors: [401, 403, 404, 503] } },
    [`${P}/secrets`]: {
      get: { summary: 'Secret names (never values), the manifest [env] spec and what is missing.', ok: { status: 200, schema: listing }, errors: [401, 403, 404] },
      patch: { summary: 'Set and unset secrets in one atomic batch.', body: z.strictObject({ set: z.record(z.string(), z.string()).optional(), unset: z.array(z.string()).optional() }), ok: { status: 200, schema: listing }, errors: [400, 401, 403, 404] },
    },
    [`${P}/secrets/{name}`]: {
      put: { summary: 'Set one secret. Names ^[A-Z_][A-Z0-9_]*$; the SVC_ prefix is refused.', body: z.strictObject({ value: z.string() }), ok: { status: 204, schema: empty }, errors: [400, 401, 403, 404] },
      delete: { summary: 'Remove one secret.', ok: { status: 204, schema: empty }, errors: [400, 401, 403, 404] },
    },
    [`${P}/triggers`]: { get: { summary: 'Triggers synced from [[triggers]] on the default branch.', ok: { status: 200, schema: z.object({ triggers: z.array(trigger) }) }, errors: [401, 403, 404] } },
    [`${P}/triggers/{slug}`]: { get: { summary: 'One trigger with its recent fires.', ok: { status: 200, schema: z.object({ trigger }) }, errors: [401, 403, 404] } },
    [`${P}/triggers/{slug}/fire`]: { post: { summary: 'Fire now: spawns a session (503 with outcome "sessions unavailable" when the server cannot).', body: empty, ok: { status: 202, schema: z.object({ session: z.object({}) }) }, errors: [400, 401, 403, 404, 503] } },
    [`${P}/triggers/{slug}/enable`]: { post: { summary: 'Open a CR that sets enabled = true in svc.toml (one line).', body: empty, ok: { status: 201, schema: cr }, errors: [400, 401, 403, 404, 409, 503] } },
    [`${P}/triggers/{slug}/disable`]: { post: { summary: 'Open a CR that sets enabled = false in svc.toml (one line).', body: empty, ok: { status: 201, schema: cr }, errors: [400, 401, 403, 404, 409, 503] } },
    [`${P}/apps`]: { get: { summary: 'Apps from [[apps]] and what runs.', ok: { status: 200, schema: z.object({ apps: z.array(app) }) }, errors: [401, 403, 404] } },
    [`${P}/apps/{name}`]: { get: { summary: 'One app with its recent deploys.', ok: { status: 200, schema: z.object({ app }) }, errors: [401, 403, 404] } },
  };
}
