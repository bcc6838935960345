import { z } from 'zod';
import { branchNameProblem } from '../domain/refs.js';

/**
 * Request schemas: the routes validate with these and the OpenAPI document is generated
 * from them, so the two cannot drift. Commands reject unknown fields.
 */

/**
 * Text that Postgres can store: no NUL (text and jsonb refuse it) and no unpaired UTF-16
 * surrogate (jsonb refuses its escape). Either would otherwise surface as a 500.
 */
// eslint-disable-next-line no-control-regex
const UNSTORABLE = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
const storable = (v: string) => !UNSTORABLE.test(v);
const text = (max: number) => z.string().max(max).refine(storable, 'must not contain NUL or unpaired surrogates');

const branch = (field: string) =>
  z
    .string()
    .max(255)
    .superRefine((v, ctx) => {
      if (v === '') return; // emptiness is the decider's 400, with its own message
      const problem = storable(v) ? branchNameProblem(v) : 'must not contain unpaired surrogates';
      if (problem) ctx.addIssue({ code: 'custom', message: `${field} is not a valid branch name: ${problem}` });
    });

export const METADATA_MAX_DEPTH = 32;
export const METADATA_MAX_BYTES = 65_536;

/** Free-form, but storable and bounded: nesting, size, and every key and string. */
function metadataProblem(value: unknown): string | null {
  const stack: [unknown, number][] = [[value, 0]];
  while (stack.length) {
    const [v, depth] = stack.pop()!;
    if (depth > METADATA_MAX_DEPTH) return `must not nest deeper than ${METADATA_MAX_DEPTH} levels`;
    if (typeof v === 'string' && !storable(v)) return 'strings must not contain NUL or unpaired surrogates';
    if (Array.isArray(v)) for (const x of v) stack.push([x, depth + 1]);
    else if (v !== null && typeof v === 'object') {
      for (const [k, x] of Object.entries(v)) {
        if (!storable(k)) return 'keys must not contain NUL or unpaired surrogates';
        stack.push([x, depth + 1]);
      }
    }
  }
  if (Buffer.byteLength(JSON.stringify(value)) > METADATA_MAX_BYTES) return `must be at most ${METADATA_MAX_BYTES} bytes as JSON`;
  return null;
}

const metadata = z.record(text(256), z.unknown()).superRefine((v, ctx) => {
  const problem = metadataProblem(v);
  if (problem) ctx.addIssue({ code: 'custom', message: `metadata ${problem}` });
});

export const sha = z.string().regex(/^[0-9a-f]{40}$/, 'must be a 40-character lowercase hex commit id');

export const CreateChangeRequestBody = z.strictObject({
  title: text(1024),
  description: text(65_536).optional(),
  head_ref: branch('head_ref'),
  base_ref: branch('base_ref').optional(),
  session_id: text(128).optional(),
  metadata: metadata.optional(),
});

export const EditChangeRequestBody = z
  .strictObject({
    title: text(1024).optional(),
    description: text(65_536).optional(),
  })
  .refine((b) => b.title !== undefined || b.description !== undefined, { message: 'give title and/or description' });

export const MergeChangeRequestBody = z.strictObject({
  message: text(65_536).min(1).optional(),
  expected_head_sha: sha.optional(),
});

export const EmptyBody = z.strictObject({});

/** Cursor pagination (GitHub's shape): `per_page` 1..100, default 30; `cursor` from `next_cursor` / `Link: rel="next"`. */
export const PageQuery = z.object({
  per_page: z.coerce.number().int().min(1).max(100).default(30),
  cursor: z.string().min(1).max(200).optional(),
});

export const ListChangeRequestsQuery = PageQuery.extend({
  status: z.enum(['open', 'merged', 'closed', 'all']).default('all'),
});

export const ListProjectsQuery = PageQuery;

export const GetChangeRequestQuery = z.object({
  as_of: z.iso.datetime({ offset: true }).optional(),
});

export const EventsFeedQuery = z.object({
  after: z
    .string()
    .regex(/^[0-9]{1,15}$/, 'must be a global_position the feed delivered (0: from the start)')
    .optional(),
  access_token: z.string().optional(),
});

export const CreateProjectBody = z.strictObject({
  name: text(200).min(1),
  slug: z
    .string()
    .regex(/^[a-z0-9][a-z0-9-]{0,62}$/, 'lowercase letters, digits and dashes, starting with a letter or digit, at most 63')
    .optional(),
  repo_url: text(2048).min(1).optional(),
  default_branch: branch('default_branch').optional(),
  account_id: z.uuid().optional(),
});

/** `svc login` registers its login: its loopback callback and a PKCE (S256) challenge. */
export const StartCliLoginBody = z.strictObject({
  callback: z.string().max(200),
  hostname: z.string().max(200).optional(),
  code_challenge: z.string().regex(/^[A-Za-z0-9_-]{43}$/, 'base64url of a sha256'),
  code_challenge_method: z.literal('S256'),
});

/** `svc login` redeems the one-time code the dashboard's approval sent to its callback, with its PKCE verifier. */
export const RedeemCliLoginBody = z.strictObject({
  state: z.string().regex(/^[A-Za-z0-9_-]{16,128}$/, 'not a login state'),
  code: z.string().regex(/^[A-Za-z0-9_-]{16,128}$/, 'not a login code'),
  code_verifier: z.string().regex(/^[A-Za-z0-9._~-]{43,128}$/, 'not a PKCE verifier (43 to 128 characters)'),
});

export const CreateTokenBody = z.strictObject({
  name: text(200).optional(),
  /** Days until the token stops working (none: it lasts until revoked). */
  expires_in_days: z.number().int().min(1).max(3650).optional(),
});

export const TokenSchema = z.object({
  token_id: z.uuid(),
  name: z.string(),
  project_id: z.uuid().nullable(),
  created_at: z.string(),
  expires_at: z.string().nullable(),
  last_used_at: z.string().nullable(),
});

/** Response shapes, for the OpenAPI document. */
export const ChangeRequestSchema = z.object({
  cr_id: z.uuid(),
  account_id: z.uuid(),
  project_id: z.uuid(),
  number: z.number().int(),
  title: z.string(),
  description: z.string(),
  base_ref: z.string(),
  head_ref: z.string(),
  status: z.enum(['open', 'merged', 'closed']),
  head_commit_sha: z.string().nullable(),
  base_commit_sha: z.string().nullable(),
  origin_session_id: z.string().nullable(),
  created_by: z.uuid(),
  merged_at: z.string().nullable(),
  merged_by: z.uuid().nullable(),
  merge_commit_sha: z.string().nullable(),
  closed_at: z.string().nullable(),
  closed_by: z.uuid().nullable(),
  metadata: z.record(z.string(), z.unknown()),
  created_at: z.string(),
  updated_at: z.string(),
});

export const ProjectSchema = z.object({
  project_id: z.uuid(),
  account_id: z.uuid(),
  name: z.string(),
  slug: z.string(),
  repo_url: z.string().nullable(),
  default_branch: z.string(),
  created_at: z.string(),
});

export const MergePreviewSchema = z.object({
  base_sha: z.string(),
  head_sha: z.string(),
  merge_base: z.string().nullable(),
  is_up_to_date: z.boolean(),
  can_merge: z.boolean(),
  can_fast_forward: z.boolean(),
  conflicts: z.array(z.string()),
});

export const DiffSchema = z.object({
  base_sha: z.string(),
  head_sha: z.string(),
  merge_base: z.string().nullable(),
  files: z.array(
    z.object({
      path: z.string(),
      status: z.enum(['added', 'modified', 'deleted']),
      additions: z.number().int(),
      deletions: z.number().int(),
      binary: z.boolean(),
      patch_truncated: z.boolean(),
    }),
  ),
  additions: z.number().int(),
  deletions: z.number().int(),
  truncated: z.boolean(),
  files_truncated: z.boolean(),
  total_files: z.number().int(),
  limits: z.object({}).passthrough(),
  patch: z.string(),
});

/** One message of the live feed (`GET /v1/projects/:projectId/events`, WebSocket). */
export const FeedMessageSchema = z.object({
  global_position: z.number().int(),
  stream_id: z.string(),
  stream_position: z.number().int(),
  type: z.string(),
  data: z.record(z.string(), z.unknown()),
  actor: z.string(),
  recorded_at: z.string(),
});

export const ErrorSchema = z.object({
  error: z.string(),
  message: z.string(),
  issues: z.array(z.object({ path: z.string(), message: z.string() })).optional(),
  conflicts: z.array(z.string()).optional(),
});
