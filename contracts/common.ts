import { z } from 'zod';
import { branchNameProblem } from '../domain/refs.js';

/**
 * Pieces every contract uses: bounded storable text, branch names, commit ids, times, the
 * error body. Request schemas reject unknown fields (commands); response schemas are exact
 * (`z.strictObject`), so the integration tests' check of every response against the OpenAPI
 * document catches a field the server adds, drops or retypes.
 */

/**
 * Text that Postgres can store: no NUL (text and jsonb refuse it) and no unpaired UTF-16
 * surrogate (jsonb refuses its escape). Either would otherwise surface as a 500.
 */
// eslint-disable-next-line no-control-regex
export const UNSTORABLE = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
export const storable = (v: string) => !UNSTORABLE.test(v);
export const text = (max: number) => z.string().max(max).refine(storable, 'must not contain NUL or unpaired surrogates');

/** A branch name in a request; emptiness is left to the decider's 400, with its own message. */
export const branch = (field: string) =>
  z
    .string()
    .max(255)
    .superRefine((v, ctx) => {
      if (v === '') return;
      const problem = storable(v) ? branchNameProblem(v) : 'must not contain unpaired surrogates';
      if (problem) ctx.addIssue({ code: 'custom', message: `${field} is not a valid branch name: ${problem}` });
    });

export const sha = z.string().regex(/^[0-9a-f]{40}$/, 'must be a 40-character lowercase hex commit id');
/** A commit id in a response (sha-1 today; sha-256 repositories answer 64). */
export const shaOut = z.string().regex(/^[0-9a-f]{40}([0-9a-f]{24})?$/);
/** ISO-8601 UTC, as every response writes times. */
export const time = z.iso.datetime();
export const uuid = z.uuid();

export const EmptyBody = z.strictObject({});

/** Cursor pagination (GitHub's shape): `per_page` 1..100, default 30; `cursor` from `next_cursor` / `Link: rel="next"`. */
export const PageQuery = z.object({
  per_page: z.coerce.number().int().min(1).max(100).default(30),
  cursor: z.string().min(1).max(200).optional(),
});

export const IssueSchema = z.strictObject({ path: z.string(), message: z.string() });

/**
 * The error body of every status >= 400 (contracts.md "HTTP basics"): `error` and `message`,
 * plus the fields that help with that error. Each optional field is named here, with what
 * sends it, so a new one is a contract change, not a surprise.
 */
export const ErrorSchema = z.strictObject({
  error: z.string(),
  message: z.string(),
  /** 400 validation: which fields, why. */
  issues: z.array(IssueSchema).optional(),
  /** 409 merge conflicts: the conflicting paths. */
  conflicts: z.array(z.string()).optional(),
  /** 409 head modified: what the caller expected and what the head is. */
  expected_head_sha: z.string().optional(),
  head_sha: z.string().nullable().optional(),
  /** 409 a CR or session in the wrong state for the command. */
  status: z.string().optional(),
  /** 429 too many sessions: the account's cap. */
  limit: z.number().int().optional(),
  /** 429/503 with Retry-After: the same seconds. */
  retry_after: z.number().int().optional(),
  /** 503 trigger fire without a session: what was recorded. */
  outcome: z.string().optional(),
  /** 503 repository unavailable: git's exit code. */
  git_exit_code: z.number().int().nullable().optional(),
  /** 400/503 repository not reachable: its path (file://) or URL, and why (not found, auth refused, unreachable ...). */
  repository: z.string().optional(),
  cause: z.string().optional(),
  /** 504: the budget that ran out. */
  timeout_ms: z.number().int().optional(),
  /** 400 repo_url refused by the URL policy: the rule. */
  rule: z.string().optional(),
  /** 429 project_budget_exceeded / account_budget_exceeded: the budget that is spent. */
  budget: z
    .strictObject({ scope: z.enum(['project', 'account']), scope_id: z.string(), unit: z.enum(['tokens', 'money']), period: z.enum(['day', 'month']), limit: z.number(), currency: z.string().nullable() })
    .optional(),
  /** A machine-stable refinement of `error` (e.g. `agent_cannot_merge`). */
  code: z.string().optional(),
  reason: z.string().optional(),
  slug: z.string().optional(),
});
