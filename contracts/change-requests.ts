import { z } from 'zod';
import { branch, PageQuery, sha, shaOut, storable, text, time, uuid } from './common.js';

/** Change requests (contracts.md "Change requests"; docs/api.md). */

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

export const CreateChangeRequestBody = z.strictObject({
  title: text(1024),
  description: text(65_536).optional(),
  head_ref: branch('head_ref'),
  base_ref: branch('base_ref').optional(),
  session_id: text(128).optional(),
  metadata: metadata.optional(),
});
export type CreateChangeRequestInput = z.input<typeof CreateChangeRequestBody>;

export const EditChangeRequestBody = z
  .strictObject({
    title: text(1024).optional(),
    description: text(65_536).optional(),
    /** A new base (an extension, docs/api.md): people only; records ChangeRequestRetargeted and ends merge-when-green. */
    base_ref: branch('base_ref').optional(),
  })
  .refine((b) => b.title !== undefined || b.description !== undefined || b.base_ref !== undefined, { message: 'give title, description and/or base_ref' });

export const MergeChangeRequestBody = z.strictObject({
  message: text(65_536).min(1).optional(),
  expected_head_sha: sha.optional(),
  /** Merge when green (docs/checks.md): 202, merged by the server once the checks pass on the head seen now. */
  when: z.literal('checks_pass').optional(),
  /** Merge the CR and every open CR below it in its stack, bottom-up (docs/stacks.md). */
  stack: z.boolean().optional(),
}).refine((b) => !(b.stack && b.when), { message: 'stack and when cannot be combined: merge-when-green is asked of each change request', path: ['stack'] });

export const ListChangeRequestsQuery = PageQuery.extend({
  status: z.enum(['open', 'merged', 'closed', 'all']).default('all'),
});

export const GetChangeRequestQuery = z.object({
  as_of: z.iso.datetime({ offset: true }).optional(),
});

export const CrStatusSchema = z.enum(['open', 'merged', 'closed']);
export type CrStatus = z.infer<typeof CrStatusSchema>;

/** The CR object of every response: exactly the spec's columns. */
export const ChangeRequestSchema = z.strictObject({
  cr_id: uuid,
  account_id: uuid,
  project_id: uuid,
  number: z.number().int().min(1),
  title: z.string(),
  description: z.string(),
  base_ref: z.string(),
  head_ref: z.string(),
  status: CrStatusSchema,
  head_commit_sha: shaOut.nullable(),
  base_commit_sha: shaOut.nullable(),
  origin_session_id: z.string().nullable(),
  created_by: uuid,
  merged_at: time.nullable(),
  merged_by: uuid.nullable(),
  merge_commit_sha: shaOut.nullable(),
  closed_at: time.nullable(),
  closed_by: uuid.nullable(),
  metadata: z.record(z.string(), z.unknown()),
  created_at: time,
  updated_at: time,
});
export type ChangeRequest = z.infer<typeof ChangeRequestSchema>;

export const OneChangeRequest = z.strictObject({ change_request: ChangeRequestSchema });

/** One CR of a stack: the CR's own JSON (the spec's fields) and where it stands. */
export const StackEntrySchema = z.strictObject({
  change_request: ChangeRequestSchema,
  /** The CR it is stacked on (its base is that CR's head), or null at the bottom. */
  parent_cr_id: uuid.nullable(),
  child_cr_ids: z.array(uuid),
  /** For people: its parent closed unmerged and it waits for a person, or null. */
  note: z.string().nullable(),
});
/** `GET …/change-requests/:crId/stack`: ancestors root first, the CR, its descendants. */
export const CrStackSchema = z.strictObject({ cr_id: uuid, stack: z.array(StackEntrySchema) });
export type CrStack = z.infer<typeof CrStackSchema>;
export const ChangeRequestPage = z.strictObject({ change_requests: z.array(ChangeRequestSchema), next_cursor: z.string().nullable() });

export const MergePreviewSchema = z.strictObject({
  base_sha: shaOut,
  head_sha: shaOut,
  merge_base: shaOut.nullable(),
  is_up_to_date: z.boolean(),
  can_merge: z.boolean(),
  can_fast_forward: z.boolean(),
  conflicts: z.array(z.string()),
});
export type MergePreview = z.infer<typeof MergePreviewSchema>;

/** `GET /v1/projects/:projectId/compare?base=&head=`: two branches, before any CR (`base` defaults to the default branch). */
export const CompareQuery = z.object({
  base: z.string().min(1).max(255).optional(),
  head: z.string().min(1).max(255),
});
/**
 * The merge preview of `head` into `base`, named: `is_up_to_date` says `head` adds nothing
 * (every commit on it is in `base`), what `svc cr open` refuses without `--allow-empty`.
 */
export const CompareSchema = MergePreviewSchema.extend({ base_ref: z.string(), head_ref: z.string() });
export type Compare = z.infer<typeof CompareSchema>;

export const DiffFileSchema = z.strictObject({
  path: z.string(),
  status: z.enum(['added', 'modified', 'deleted']),
  additions: z.number().int().min(0),
  deletions: z.number().int().min(0),
  binary: z.boolean(),
  /** The file's patch was left out of `patch`: over the per-file or total limits. */
  patch_truncated: z.boolean(),
});
export type DiffFile = z.infer<typeof DiffFileSchema>;

/** Three-dot diff base...head, bounded by the server's limits (docs/hardening.md). */
export const DiffSchema = z.strictObject({
  base_sha: shaOut,
  head_sha: shaOut,
  merge_base: shaOut.nullable(),
  files: z.array(DiffFileSchema),
  additions: z.number().int().min(0),
  deletions: z.number().int().min(0),
  truncated: z.boolean(),
  files_truncated: z.boolean(),
  total_files: z.number().int().min(0),
  limits: z.strictObject({
    max_file_bytes: z.number().int(),
    max_file_lines: z.number().int(),
    max_total_bytes: z.number().int(),
    max_total_lines: z.number().int(),
    max_files: z.number().int(),
  }),
  patch: z.string(),
});
export type Diff = z.infer<typeof DiffSchema>;
