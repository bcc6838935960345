import * as c from '../contracts/index.js';
import type { Op } from './openapi.js';

/** OpenAPI entries of checks, commit statuses and their logs (docs/checks.md), and a CR's cost (docs/models.md). */
const P = '/v1/projects/{projectId}';

export function checkOps(): Record<string, Record<string, Op>> {
  return {
    [`${P}/change-requests/{crId}/checks`]: {
      get: { summary: "The latest run of each check (on the merge result of the pair it names), the head's commit statuses (required ones marked), merge when green.", query: c.CrChecksQuery, ok: { status: 200, schema: c.CrChecksSchema }, errors: [400, 401, 403, 404] },
    },
    [`${P}/change-requests/{crId}/checks/{runId}/log`]: {
      get: { summary: "A run's output as text/plain (nosniff): bounded, known secret values masked.", ok: { status: 200, schema: null, description: 'text/plain' }, errors: [401, 403, 404] },
      delete: { summary: "Delete a run's log (people only).", ok: { status: 204, schema: null }, errors: [401, 403, 404] },
    },
    [`${P}/change-requests/{crId}/cost`]: {
      get: { summary: "What the CR cost (docs/models.md \"Cost\"): the model calls of its session's branch that belong to it (open then, else the next CR opened from it), money per currency at the prices each call kept, unpriced tokens, its share of the sandbox's running time, its check runs' time; unmetered when the agent bypasses the gateway.", ok: { status: 200, schema: c.OneCrCost }, errors: [401, 403, 404] },
    },
    [`${P}/merge-queue`]: {
      get: { summary: "A base branch's merge queue (?base=, default the default branch): entries in order with their speculative merge result and its runs, the state, the latest CRs to leave and why.", query: c.MergeQueueQuery, ok: { status: 200, schema: c.OneMergeQueue }, errors: [400, 401, 403, 404] },
    },
    [`${P}/merge-queue/{crId}`]: {
      delete: { summary: 'Take a CR out of the merge queue (by_person); people only (agent credentials 403 agent_cannot_merge); 409 when it is not queued.', ok: { status: 200, schema: c.DequeuedEntry }, errors: [400, 401, 403, 404, 409] },
    },
    [`${P}/statuses/{sha}`]: {
      post: { summary: "An outside CI's commit status (GitHub's shape); people's tokens only (agent credentials 403); a check's name as context 400; target_url http(s) only.", body: c.PostStatusBody, ok: { status: 201, schema: c.OneStatus }, errors: [400, 401, 403, 404] },
    },
  };
}
