import { z } from 'zod';
import * as c from '../contracts/index.js';
import { manifestOps } from './openapi-manifest.js';
import { reviewOps } from './openapi-review.js';
import { checkOps } from './openapi-checks.js';

/**
 * The OpenAPI 3.1 document, generated from the wire contracts (`contracts/`), the same zod
 * schemas the routes validate requests with. Response schemas are exact, and the
 * integration tests check every JSON response against this document
 * (test/support/response-contract.ts). `docs/api.md` is the reference for people.
 */
export type Op = {
  summary: string;
  body?: z.ZodType;
  query?: z.ZodObject;
  ok: { status: number; schema: z.ZodType | null; description?: string };
  /** Another success the operation may answer (merge when green: 202). */
  alsoOk?: { status: number; schema: z.ZodType; description: string };
  errors: number[];
  /** No bearer token (health, the OpenAPI document, `svc login`'s redeem). */
  public?: boolean;
};

const json = (schema: z.ZodType, io: 'input' | 'output') => ({ content: { 'application/json': { schema: z.toJSONSchema(schema, { io, unrepresentable: 'any' }) } } });

const crPath = '/v1/projects/{projectId}/change-requests';
const sessPath = '/v1/projects/{projectId}/sessions';

const ops: Record<string, Record<string, Op>> = {
  '/healthz': { get: { summary: 'The process is up.', ok: { status: 200, schema: c.HealthSchema }, errors: [], public: true } },
  '/readyz': { get: { summary: 'The database (and queue) are reachable; 503 with the same shape when not.', ok: { status: 200, schema: c.ReadySchema }, errors: [], public: true } },
  '/v1/accounts/me': { get: { summary: 'The caller, their active account and all accounts, and the token that asked (user tokens only).', ok: { status: 200, schema: c.MeSchema }, errors: [401, 403] } },
  '/v1/accounts/tokens': {
    get: { summary: "The caller's live tokens (never their values).", ok: { status: 200, schema: c.TokenList }, errors: [401, 403] },
    post: { summary: 'Mint a user token (shown once).', body: c.CreateTokenBody, ok: { status: 201, schema: c.MintedTokenSchema }, errors: [400, 401, 403] },
  },
  '/v1/cli/login': {
    post: { summary: 'svc login: registers a browser login (loopback callback, PKCE S256 challenge); answers the login id (state) and the user code the approval page asks for (no bearer; 10 minutes).', body: c.StartCliLoginBody, ok: { status: 201, schema: c.StartedCliLoginSchema }, errors: [400, 429], public: true },
  },
  '/v1/cli/login/token': {
    post: { summary: "svc login: redeem the one-time code the dashboard's approval sent to the CLI's callback, with the PKCE verifier, for a user token (no bearer; once, within two minutes).", body: c.RedeemCliLoginBody, ok: { status: 201, schema: c.MintedTokenSchema }, errors: [400], public: true },
  },
  '/v1/accounts/tokens/{tokenId}': { delete: { summary: 'Revoke one of your tokens.', ok: { status: 204, schema: null }, errors: [401, 403, 404] } },
  '/v1/projects': {
    get: { summary: 'Projects the token can see, oldest first, paginated (per_page, cursor; Link rel="next").', query: c.ListProjectsQuery, ok: { status: 200, schema: c.ProjectPage }, errors: [400, 401] },
    post: { summary: 'Create a project backed by a git repository (no repo_url: a managed repository served at /git/<slug>.git).', body: c.CreateProjectBody, ok: { status: 201, schema: c.OneProject }, errors: [400, 401, 403, 404, 409] },
  },
  '/v1/projects/{projectId}': {
    get: { summary: 'One project (uuid or slug).', ok: { status: 200, schema: c.OneProject }, errors: [401, 403, 404] },
    delete: { summary: 'Delete the project (user tokens only) and, for a managed repository, the repository.', ok: { status: 204, schema: null }, errors: [401, 403, 404] },
  },
  '/v1/projects/{projectId}/cli-token': { post: { summary: 'Mint a project token for the CLI, acting as the caller.', ok: { status: 201, schema: c.MintedTokenSchema }, errors: [401, 403, 404] } },
  [crPath]: {
    get: { summary: 'List change requests, newest first, paginated (per_page, cursor; Link rel="next"); open ones refresh.', query: c.ListChangeRequestsQuery, ok: { status: 200, schema: c.ChangeRequestPage }, errors: [400, 401, 403, 404] },
    post: { summary: 'Open a change request; branch tips are anchored.', body: c.CreateChangeRequestBody, ok: { status: 201, schema: c.OneChangeRequest }, errors: [400, 401, 403, 404, 409, 503, 504] },
  },
  [`${crPath}/{crId}`]: {
    get: { summary: 'One change request (uuid or number); open CRs refresh their SHAs.', query: c.GetChangeRequestQuery, ok: { status: 200, schema: c.OneChangeRequest }, errors: [400, 401, 403, 404] },
    patch: { summary: 'Edit title and/or description. base_ref (an extension): retarget, people only (403 agent_forbidden); 400 when the new base is the head of several open CRs or makes a cycle.', body: c.EditChangeRequestBody, ok: { status: 200, schema: c.OneChangeRequest }, errors: [400, 401, 403, 404, 409, 503] },
  },
  [`${crPath}/{crId}/stack`]: { get: { summary: 'The CR’s stack: ancestors root first, the CR, its descendants, each with its parent, children and a note when it waits for a person.', ok: { status: 200, schema: c.CrStackSchema }, errors: [401, 403, 404] } },
  [`${crPath}/{crId}/diff`]: { get: { summary: 'Three-dot diff base...head, bounded by the server’s diff limits.', ok: { status: 200, schema: c.DiffSchema }, errors: [401, 403, 404, 503, 504] } },
  [`${crPath}/{crId}/merge-preview`]: { get: { summary: 'What a merge would do now.', ok: { status: 200, schema: c.MergePreviewSchema }, errors: [401, 403, 404, 503, 504] } },
  '/v1/projects/{projectId}/compare': { get: { summary: 'Compare two live branches (base defaults to the default branch): the merge preview of head into base; is_up_to_date means head adds nothing.', query: c.CompareQuery, ok: { status: 200, schema: c.CompareSchema }, errors: [400, 401, 403, 404, 503, 504] } },
  [`${crPath}/{crId}/events`]: { get: { summary: 'The CR’s history, in order, with actors.', ok: { status: 200, schema: c.CrHistorySchema }, errors: [401, 403, 404] } },
  [`${crPath}/{crId}/merge`]: { post: { summary: 'Merge: fast-forward when possible, else a merge commit. 409 when not open or conflicting; 403 agent_cannot_merge for an agent token (a person merges); 409 merge_queue_enabled when the manifest in force turns the merge queue on. {"when":"checks_pass"}: 202, merged by the server once every check and required status passed on the head seen now (422 no_required_checks when nothing is required); with the merge queue on, the CR enters its base branch\'s queue (merge_queue in the answer). {"stack":true}: the CR and every open CR below it, bottom-up, each by compare-and-swap; answers the CR merged.', body: c.MergeChangeRequestBody, ok: { status: 200, schema: c.OneChangeRequest }, alsoOk: { status: 202, schema: c.AutoMergeAccepted, description: 'Merge when green accepted' }, errors: [400, 401, 403, 404, 409, 422, 503, 504] } },
  [`${crPath}/{crId}/close`]: { post: { summary: 'Close an open CR.', body: c.EmptyBody, ok: { status: 200, schema: c.OneChangeRequest }, errors: [400, 401, 403, 404, 409, 503] } },
  [`${crPath}/{crId}/reopen`]: { post: { summary: 'Reopen a closed CR.', body: c.EmptyBody, ok: { status: 200, schema: c.OneChangeRequest }, errors: [400, 401, 403, 404, 409, 503] } },
  '/v1/projects/{projectId}/channels': {
    get: { summary: 'The project’s chat channels (webhook URLs shown as their origin).', ok: { status: 200, schema: c.ChannelList }, errors: [401, 403, 404] },
    post: { summary: 'Add a channel (an incoming-webhook URL).', body: c.AddChannelBody, ok: { status: 201, schema: c.OneChannel }, errors: [400, 401, 403, 404] },
  },
  '/v1/projects/{projectId}/budget': {
    get: { summary: 'The project’s model budget (a person’s: tokens or money per UTC day or month) with what its period spent and holds; null when none.', ok: { status: 200, schema: c.OneBudget }, errors: [401, 403, 404] },
    put: { summary: 'Set (or, with {"limit":null}, remove) the project’s model budget; a person only (403 agent_forbidden), within the operator’s cap (400). Over it: model calls, new sessions and trigger fires get 429 project_budget_exceeded.', body: c.SetBudgetBody, ok: { status: 200, schema: c.OneBudget }, errors: [400, 401, 403, 404] },
  },
  '/v1/accounts/{accountId}/budget': {
    get: { summary: 'The account’s model budget, over all its projects; null when none. Members, with a user token.', ok: { status: 200, schema: c.OneBudget }, errors: [401, 403, 404] },
    put: { summary: 'Set (or remove) the account’s model budget; a person with a user token only. Over it: 429 account_budget_exceeded.', body: c.SetBudgetBody, ok: { status: 200, schema: c.OneBudget }, errors: [400, 401, 403, 404] },
  },
  '/v1/projects/{projectId}/channels/{channelId}': { delete: { summary: 'Remove a channel.', ok: { status: 204, schema: null }, errors: [401, 403, 404] } },
  [sessPath]: {
    get: { summary: 'List sessions, newest first.', query: c.ListSessionsQuery, ok: { status: 200, schema: c.SessionList }, errors: [400, 401, 403, 404, 503] },
    post: { summary: 'Create a session: 201 at once with status provisioning; 409 no_model for a first prompt no model can answer; 429 over the account’s cap (with Retry-After) or past a budget a person set (project_budget_exceeded / account_budget_exceeded, without).', body: c.CreateSessionBody, ok: { status: 201, schema: c.OneSession }, errors: [400, 401, 403, 404, 409, 429, 503] },
  },
  [`${sessPath}/{sessionId}`]: {
    get: { summary: 'One session.', ok: { status: 200, schema: c.OneSession }, errors: [401, 403, 404, 503] },
    delete: { summary: 'Stop and remove the session (the branch stays).', ok: { status: 204, schema: null }, errors: [401, 403, 404, 503] },
  },
  [`${sessPath}/{sessionId}/events`]: { get: { summary: 'The session’s history, in order.', ok: { status: 200, schema: c.SessionHistorySchema }, errors: [401, 403, 404, 503] } },
  [`${sessPath}/{sessionId}/stop`]: { post: { summary: 'Stop: credentials revoked at once, sandbox torn down.', body: c.AbortSessionBody, ok: { status: 200, schema: c.OneSession }, errors: [400, 401, 403, 404, 409, 503] } },
  [`${sessPath}/{sessionId}/restart`]: { post: { summary: 'A new sandbox with new credentials; it restores what the stop saved unless `fresh` (docs/sessions.md, pause and resume).', body: c.RestartSessionBody, ok: { status: 200, schema: c.OneSession }, errors: [400, 401, 403, 404, 409, 429, 503] } },
  [`${sessPath}/{sessionId}/refresh`]: { post: { summary: 'Re-pull the session branch in the sandbox and restart the agent runtime in place (the dashboard’s Refresh); 202 once the daemon accepted it.', body: c.EmptyBody, ok: { status: 202, schema: c.OneSession }, errors: [400, 401, 403, 404, 409, 503] } },
  [`${sessPath}/{sessionId}/prompt`]: { post: { summary: 'Deliver a prompt to the running agent; 409 no_model at once when no model can answer (docs/models.md).', body: c.PromptSessionBody, ok: { status: 202, schema: c.PromptResultSchema }, errors: [400, 401, 403, 404, 409, 503] } },
  [`${sessPath}/{sessionId}/abort`]: { post: { summary: 'Abort the agent’s current run.', body: c.AbortSessionBody, ok: { status: 200, schema: c.AbortResultSchema }, errors: [400, 401, 403, 404, 409, 503] } },
  [`${sessPath}/{sessionId}/preview-url`]: { get: { summary: 'The preview’s own origin for a sandbox port (p<port>-<session>.<preview domain>); default port 3000.', query: z.object({ port: z.string().regex(/^\d{1,5}$/).optional() }), ok: { status: 200, schema: z.object({ url: z.string(), port: z.number().int() }) }, errors: [400, 401, 403, 404] } },
  [`${sessPath}/{sessionId}/wip`]: {
    put: { summary: 'A checkpoint of the session’s workspace and conversation (a binary frame); only the SVC_TOKEN of the session’s own live sandbox; 429 with Retry-After when its checkpoints come too fast.', ok: { status: 200, schema: c.CheckpointAcceptedSchema }, errors: [400, 401, 404, 413, 429, 503] },
    get: { summary: 'The saved checkpoint for the session’s new sandbox (a binary frame, not JSON); only the SVC_TOKEN of the session’s own live sandbox.', ok: { status: 200, schema: z.unknown() }, errors: [401, 404, 503] },
  },
  '/v1/projects/{projectId}/git/clone-credential': { get: { summary: "A short-lived agent-grade git credential for a repository this server serves (never a remote's stored credentials: 404); only the SVC_TOKEN of a live sandbox of the project.", ok: { status: 200, schema: c.CloneCredentialSchema }, errors: [401, 404, 503] } },
  // The model gateway (docs/models.md): a sandbox's SVC_LLM_API_KEY only; errors in OpenAI's shape.
  '/v1/llm/chat/completions': { post: { summary: 'OpenAI chat completions (streamed or not, tools) relayed to the server’s upstream; usage recorded; 429 over a token budget.', body: z.object({ model: z.string(), messages: z.array(z.unknown()), stream: z.boolean().optional() }).loose(), ok: { status: 200, schema: z.object({}).loose() }, errors: [400, 401, 404, 429, 502, 503] } },
  '/v1/llm/models': { get: { summary: 'The models sessions may use through the gateway (SVC_LLM_MODELS).', ok: { status: 200, schema: z.object({ object: z.literal('list'), data: z.array(z.object({ id: z.string(), object: z.literal('model'), created: z.number(), owned_by: z.string() })) }) }, errors: [401] } },
  '/v1/projects/{projectId}/events': {
    get: {
      summary:
        'Live feed of the project’s events over a WebSocket (Upgrade: websocket). Auth as everywhere, or ?access_token= for browsers; refusals (400/401/403/404) come before the upgrade; a plain GET gets 426.',
      query: c.EventsFeedQuery,
      ok: {
        status: 101,
        schema: c.FeedMessageSchema,
        description: 'Switching Protocols. Then one text message per event, this shape, in commit-safe order; resume with ?after=<global_position>.',
      },
      errors: [400, 401, 403, 404, 426],
    },
  },
  // --- manifest, secrets, triggers, apps (docs/manifest.md) ---
  ...manifestOps(),
  ...reviewOps(),
  // --- checks, statuses, merge when green (docs/checks.md) ---
  ...checkOps(),
  // --- outcomes and cost (docs/insights.md) ---
  '/v1/projects/{projectId}/insights': { get: { summary: "Outcomes and cost of the project's agents: CRs opened, merged, closed unmerged, merge rate, median time to merge, review rounds, first check runs failed, queue ejections, sessions ended without a CR, tokens, money and cost per merged CR; per agent, model, trigger, person or week (group_by), in [from, to) by the events' recorded times, as_of: only what was recorded by then.", query: c.InsightsQuery, ok: { status: 200, schema: c.InsightsSchema }, errors: [400, 401, 403, 404] } },
  '/v1/accounts/{accountId}/insights': { get: { summary: "The same over every project of an account (its members; user tokens only).", query: c.InsightsQuery, ok: { status: 200, schema: c.InsightsSchema }, errors: [400, 401, 403, 404] } },
};

/**
 * Statuses any operation may answer, with the error body: a body the parser refuses (400,
 * 413), a credential that failed too often (429), and the 500 that is always a bug.
 */
const ANY_ROUTE_ERRORS = [400, 413, 429, 500];

export function buildOpenApi(): object {
  const paths: Record<string, object> = {};
  for (const [path, methods] of Object.entries(ops)) {
    const item: Record<string, object> = {};
    for (const [method, op] of Object.entries(methods)) {
      const params = [...path.matchAll(/\{(\w+)\}/g)].map((m) => ({ name: m[1], in: 'path', required: true, schema: { type: 'string' } }));
      if (op.query) {
        for (const [name, schema] of Object.entries(op.query.shape)) {
          params.push({ name, in: 'query', required: false, schema: z.toJSONSchema(schema as z.ZodType, { io: 'input' }) as never });
        }
      }
      const errors = [...new Set([...op.errors, ...(op.public ? [] : [401]), ...ANY_ROUTE_ERRORS])].filter((s) => s !== op.ok.status).sort();
      item[method] = {
        summary: op.summary,
        ...(params.length ? { parameters: params } : {}),
        // Requests are described as callers write them (defaults optional), responses as the server writes them.
        ...(op.body ? { requestBody: { required: true, ...json(op.body, 'input') } } : {}),
        responses: {
          [op.ok.status]: { description: op.ok.description ?? 'OK', ...(op.ok.schema ? json(op.ok.schema, 'output') : {}) },
          ...(op.alsoOk ? { [op.alsoOk.status]: { description: op.alsoOk.description, ...json(op.alsoOk.schema, 'output') } } : {}),
          ...Object.fromEntries(errors.map((code) => [code, { description: String(code), ...json(c.ErrorSchema, 'output') }])),
          ...(path === '/readyz' ? { 503: { description: 'Not ready', ...json(c.ReadySchema, 'output') } } : {}),
        },
        ...(op.public ? { security: [] } : { security: [{ bearer: [] }] }),
      };
    }
    paths[path] = item;
  }
  return {
    openapi: '3.1.0',
    info: { title: 'svc API', version: '1' },
    components: { securitySchemes: { bearer: { type: 'http', scheme: 'bearer', description: 'A personal access token, svc_pat_...' } } },
    paths,
  };
}
