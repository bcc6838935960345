import * as c from '../contracts/index.js';
import type { Op } from './openapi.js';

/** OpenAPI entries of the manifest, secrets, triggers and apps routes. */
const P = '/v1/projects/{projectId}';

export function manifestOps(): Record<string, Record<string, Op>> {
  return {
    [`${P}/manifest`]: { get: { summary: 'The svc.toml in force (last valid), the commit last read, its errors and warnings.', ok: { status: 200, schema: c.ManifestViewSchema }, errors: [401, 403, 404, 503] } },
    [`${P}/secrets`]: {
      get: { summary: 'Secret names (never values), the manifest [env] spec and what is missing.', ok: { status: 200, schema: c.SecretsListingSchema }, errors: [401, 403, 404] },
      patch: { summary: 'Set and unset secrets in one atomic batch.', body: c.PatchSecretsBody, ok: { status: 200, schema: c.SecretsListingSchema }, errors: [400, 401, 403, 404] },
    },
    [`${P}/secrets/{name}`]: {
      put: { summary: 'Set one secret. Names ^[A-Z_][A-Z0-9_]*$; the SVC_ prefix is refused.', body: c.PutSecretBody, ok: { status: 204, schema: null }, errors: [400, 401, 403, 404] },
      delete: { summary: 'Remove one secret.', ok: { status: 204, schema: null }, errors: [400, 401, 403, 404] },
    },
    [`${P}/triggers`]: { get: { summary: 'Triggers synced from [[triggers]] on the default branch.', ok: { status: 200, schema: c.TriggerList }, errors: [401, 403, 404] } },
    [`${P}/triggers/{slug}`]: { get: { summary: 'One trigger with its recent fires.', ok: { status: 200, schema: c.OneTrigger }, errors: [401, 403, 404] } },
    [`${P}/triggers/{slug}/fire`]: { post: { summary: 'Fire now: spawns a session (503 with outcome "sessions unavailable" when the server cannot; 429 project_budget_exceeded past a budget a person set).', body: c.EmptyBody, ok: { status: 202, schema: c.TriggerFired }, errors: [400, 401, 403, 404, 429, 503] } },
    [`${P}/triggers/{slug}/enable`]: { post: { summary: 'Open a CR that sets enabled = true in svc.toml (one line).', body: c.EmptyBody, ok: { status: 201, schema: c.TriggerProposal }, errors: [400, 401, 403, 404, 409, 503] } },
    [`${P}/triggers/{slug}/disable`]: { post: { summary: 'Open a CR that sets enabled = false in svc.toml (one line).', body: c.EmptyBody, ok: { status: 201, schema: c.TriggerProposal }, errors: [400, 401, 403, 404, 409, 503] } },
    [`${P}/apps`]: { get: { summary: 'Apps from [[apps]] and what runs.', ok: { status: 200, schema: c.AppList }, errors: [401, 403, 404] } },
    [`${P}/apps/{name}`]: { get: { summary: 'One app with its recent deploys.', ok: { status: 200, schema: c.OneApp }, errors: [401, 403, 404] } },
  };
}
