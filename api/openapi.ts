import { z } from 'zod';
import * as s from './schemas.js';
import * as ss from './session-schemas.js';
import { manifestOps } from './openapi-manifest.js';

/**
 * The OpenAPI 3.1 document, generated from the same zod schemas the routes validate
 * with. `docs/api.md` is the reference for people.
 */
export type Op = {
  summary: string;
  body?: z.ZodType;
  query?: z.ZodObject;
  ok: { status: number; schema: z.ZodType; description?: string };
  errors: number[];
};

const json = (schema: z.ZodType) => ({ content: { 'application/json': { schema: z.toJSONSchema(schema, { io: 'input', unrepresentable: 'any' }) } } });

const crPath = '/v1/projects/{projectId}/change-requests';
const one = z.object({ change_request: s.ChangeRequestSchema });
// Sessions (issue 10, docs/sessions.md)
const sessPath = '/v1/projects/{projectId}/sessions';
const oneSession = z.object({ session: ss.SessionSchema });

const ops: Record<string, Record<string, Op>> = {
  '/v1/accounts/me': { get: { summary: 'The caller, their active account and all accounts (user tokens only).', ok: { status: 200, schema: z.object({}) }, errors: [401, 403] } },
  '/v1/accounts/tokens': {
    get: { summary: "The caller's live tokens (never their values).", ok: { status: 200, schema: z.object({ tokens: z.array(s.TokenSchema) }) }, errors: [401, 403] },
    post: { summary: 'Mint a user token (shown once).', body: s.CreateTokenBody, ok: { status: 201, schema: z.object({ token: z.string(), token_id: z.uuid() }) }, errors: [400, 401, 403] },
  },
  '/v1/cli/login/token': {
    post: { summary: "svc login: redeem the one-time code the dashboard's approval sent to the CLI's callback for a user token (no bearer; once, within two minutes).", body: s.RedeemCliLoginBody, ok: { status: 201, schema: z.object({ token: z.string(), token_id: z.uuid() }) }, errors: [400] },
  },
  '/v1/accounts/tokens/{tokenId}': { delete: { summary: 'Revoke one of your tokens.', ok: { status: 204, schema: z.object({}) }, errors: [401, 403, 404] } },
  '/v1/projects': {
    get: { summary: 'Projects the token can see, oldest first, paginated (per_page, cursor; Link rel="next").', query: s.ListProjectsQuery, ok: { status: 200, schema: z.object({ projects: z.array(s.ProjectSchema), next_cursor: z.string().nullable() }) }, errors: [400, 401] },
    post: { summary: 'Create a project backed by a git repository (no repo_url: a managed repository served at /git/<slug>.git).', body: s.CreateProjectBody, ok: { status: 201, schema: z.object({ project: s.ProjectSchema }) }, errors: [400, 401, 403, 409] },
  },
  '/v1/projects/{projectId}': {
    get: { summary: 'One project (uuid or slug).', ok: { status: 200, schema: z.object({ project: s.ProjectSchema }) }, errors: [401, 403, 404] },
    delete: { summary: 'Delete the project (user tokens only) and, for a managed repository, the repository.', ok: { status: 204, schema: z.null() }, errors: [401, 403, 404] },
  },
  '/v1/projects/{projectId}/cli-token': { post: { summary: 'Mint a project token for the CLI, acting as the caller.', ok: { status: 201, schema: z.object({ token: z.string() }) }, errors: [401, 403, 404] } },
  [crPath]: {
    get: { summary: 'List change requests, newest first, paginated (per_page, cursor; Link rel="next"); open ones refresh.', query: s.ListChangeRequestsQuery, ok: { status: 200, schema: z.object({ change_requests: z.array(s.ChangeRequestSchema), next_cursor: z.string().nullable() }) }, errors: [400, 401, 403, 404] },
    post: { summary: 'Open a change request; branch tips are anchored.', body: s.CreateChangeRequestBody, ok: { status: 201, schema: one }, errors: [400, 401, 403, 404] },
  },
  [`${crPath}/{crId}`]: {
    get: { summary: 'One change request (uuid or number); open CRs refresh their SHAs.', query: s.GetChangeRequestQuery, ok: { status: 200, schema: one }, errors: [400, 401, 403, 404] },
    patch: { summary: 'Edit title and/or description.', body: s.EditChangeRequestBody, ok: { status: 200, schema: one }, errors: [400, 401, 403, 404] },
  },
  [`${crPath}/{crId}/diff`]: { get: { summary: 'Three-dot diff base...head.', ok: { status: 200, schema: s.DiffSchema }, errors: [401, 403, 404, 503, 504] } },
  [`${crPath}/{crId}/merge-preview`]: { get: { summary: 'What a merge would do now.', ok: { status: 200, schema: s.MergePreviewSchema }, errors: [401, 403, 404, 503, 504] } },
  [`${crPath}/{crId}/events`]: { get: { summary: 'The CR’s history, in order, with actors.', ok: { status: 200, schema: z.object({ events: z.array(z.object({})) }) }, errors: [401, 403, 404] } },
  [`${crPath}/{crId}/merge`]: { post: { summary: 'Merge: fast-forward when possible, else a merge commit. 409 when not open or conflicting.', body: s.MergeChangeRequestBody, ok: { status: 200, schema: one }, errors: [400, 401, 403, 404, 409, 503] } },
  [`${crPath}/{crId}/close`]: { post: { summary: 'Close an open CR.', ok: { status: 200, schema: one }, errors: [401, 403, 404, 409, 503] } },
  [`${crPath}/{crId}/reopen`]: { post: { summary: 'Reopen a closed CR.', ok: { status: 200, schema: one }, errors: [401, 403, 404, 409, 503] } },
  [sessPath]: {
    get: { summary: 'List sessions, newest first.', query: ss.ListSessionsQuery, ok: { status: 200, schema: z.object({ sessions: z.array(ss.SessionSchema) }) }, errors: [400, 401, 403, 404] },
    post: { summary: 'Create a session: 201 at once with status provisioning; 429 over the account’s cap.', body: ss.CreateSessionBody, ok: { status: 201, schema: oneSession }, errors: [400, 401, 403, 404, 429] },
  },
  [`${sessPath}/{sessionId}`]: {
    get: { summary: 'One session.', ok: { status: 200, schema: oneSession }, errors: [401, 403, 404] },
    delete: { summary: 'Stop and remove the session (the branch stays).', ok: { status: 204, schema: z.null() }, errors: [401, 403, 404] },
  },
  [`${sessPath}/{sessionId}/events`]: { get: { summary: 'The session’s history, in order.', ok: { status: 200, schema: z.object({ events: z.array(z.object({})) }) }, errors: [401, 403, 404] } },
  [`${sessPath}/{sessionId}/stop`]: { post: { summary: 'Stop: credentials revoked at once, sandbox torn down.', body: ss.AbortSessionBody, ok: { status: 200, schema: oneSession }, errors: [400, 401, 403, 404, 409] } },
  [`${sessPath}/{sessionId}/restart`]: { post: { summary: 'A new sandbox with new credentials.', body: ss.AbortSessionBody, ok: { status: 200, schema: oneSession }, errors: [400, 401, 403, 404, 409, 429] } },
  [`${sessPath}/{sessionId}/prompt`]: { post: { summary: 'Deliver a prompt to the running agent.', body: ss.PromptSessionBody, ok: { status: 202, schema: z.object({}) }, errors: [400, 401, 403, 404, 409, 503] } },
  [`${sessPath}/{sessionId}/abort`]: { post: { summary: 'Abort the agent’s current run.', body: ss.AbortSessionBody, ok: { status: 200, schema: z.object({}) }, errors: [400, 401, 403, 404, 409, 503] } },
  [`${sessPath}/{sessionId}/preview-url`]: { get: { summary: 'The preview’s own origin for a sandbox port (p<port>-<session>.<preview domain>); default port 3000.', query: z.object({ port: z.string().regex(/^\d{1,5}$/).optional() }), ok: { status: 200, schema: z.object({ url: z.string(), port: z.number().int() }) }, errors: [400, 401, 403, 404] } },
  '/v1/projects/{projectId}/git/clone-credential': { get: { summary: 'A short-lived git credential; only the SVC_TOKEN of a live sandbox of the project.', ok: { status: 200, schema: ss.CloneCredentialSchema }, errors: [401] } },
  '/v1/projects/{projectId}/events': {
    get: {
      summary:
        'Live feed of the project’s events over a WebSocket (Upgrade: websocket). Auth as everywhere, or ?access_token= for browsers; refusals (400/401/403/404) come before the upgrade; a plain GET gets 426.',
      query: s.EventsFeedQuery,
      ok: {
        status: 101,
        schema: s.FeedMessageSchema,
        description: 'Switching Protocols. Then one text message per event, this shape, in commit-safe order; resume with ?after=<global_position>.',
      },
      errors: [400, 401, 403, 404, 426],
    },
  },
  // --- manifest, secrets, triggers, apps (issue 12; docs/manifest.md) ---
  ...manifestOps(),
};

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
      item[method] = {
        summary: op.summary,
        ...(params.length ? { parameters: params } : {}),
        ...(op.body ? { requestBody: { required: true, ...json(op.body) } } : {}),
        responses: {
          [op.ok.status]: { description: op.ok.description ?? 'OK', ...json(op.ok.schema) },
          ...Object.fromEntries(op.errors.map((code) => [code, { description: String(code), ...json(s.ErrorSchema) }])),
        },
        security: [{ bearer: [] }],
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
