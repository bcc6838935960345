import { z } from 'zod';
import { branchNameProblem } from '../domain/refs.js';

/** Request schemas of the session routes (contracts.md "Sessions"). Commands reject unknown fields. */
// eslint-disable-next-line no-control-regex
const UNSTORABLE = /\u0000|[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/;
const text = (min: number, max: number) => z.string().min(min).max(max).refine((v) => !UNSTORABLE.test(v), 'must not contain NUL or unpaired surrogates');

/**
 * What is wrong with an agent or model name, first problem only (one clear message per
 * field): letters, digits and `. _ : / @ + -`, starting with a letter or digit, and, read as
 * a path (`org/model`), no empty, `.` or `..` segment and no trailing `/`.
 */
export function nameProblem(v: string, max: number): string | null {
  if (v === '') return 'must not be empty';
  if (v.length > max) return `must be at most ${max} characters`;
  const bad = /[^A-Za-z0-9._:/@+-]/u.exec(v);
  if (bad) return `must use only letters, digits and . _ : / @ + - (not ${JSON.stringify(bad[0])})`;
  if (!/^[A-Za-z0-9]/.test(v)) return `must start with a letter or digit (not ${JSON.stringify(v[0])})`;
  if (v.endsWith('/')) return 'must not end with /';
  if (v.split('/').some((seg) => seg === '' || seg === '.' || seg === '..')) return 'must not contain an empty, . or .. path segment';
  return null;
}
const name = (max: number) =>
  z.string().superRefine((v, ctx) => {
    const problem = nameProblem(v, max);
    if (problem) ctx.addIssue({ code: 'custom', message: problem });
  });

export const CreateSessionBody = z.strictObject({
  agent: name(100).optional(),
  model: name(200).optional(),
  base_ref: z
    .string()
    .max(255)
    .superRefine((v, ctx) => {
      const problem = UNSTORABLE.test(v) ? 'must not contain unpaired surrogates' : branchNameProblem(v);
      if (problem) ctx.addIssue({ code: 'custom', message: `base_ref is not a valid branch name: ${problem}` });
    })
    .optional(),
  prompt: text(1, 100_000).optional(),
});

/** `session_id`: the agent runtime's conversation to continue (default: a new one). */
export const PromptSessionBody = z.strictObject({ text: text(1, 100_000), session_id: z.string().min(1).max(256).regex(/^[A-Za-z0-9_-]+$/).optional() });
export const AbortSessionBody = z.strictObject({});

export const ListSessionsQuery = z.object({
  status: z.enum(['queued', 'branching', 'provisioning', 'running', 'stopped', 'failed', 'completed', 'all']).default('all'),
});

export const SessionSchema = z.object({
  session_id: z.uuid(),
  project_id: z.uuid(),
  account_id: z.uuid(),
  status: z.enum(['queued', 'branching', 'provisioning', 'running', 'stopped', 'failed', 'completed']),
  agent_state: z.enum(['starting', 'ready', 'error', 'stopped']),
  base_ref: z.string(),
  branch: z.string(),
  agent: z.string(),
  model: z.string().nullable(),
  sandbox: z.object({ sandbox_id: z.uuid(), state: z.enum(['provisioning', 'active', 'stopped', 'error', 'archived']), provider: z.string(), url: z.string().nullable() }).nullable(),
  error: z.object({ code: z.string(), message: z.string(), at: z.string(), log: z.string().optional() }).nullable(),
  usage: z
    .object({
      input_tokens: z.number().int(),
      output_tokens: z.number().int(),
      requests: z.number().int(),
      by_model: z.array(z.object({ model: z.string(), input_tokens: z.number().int(), output_tokens: z.number().int(), requests: z.number().int() })),
    })
    .optional(),
  created_by: z.uuid(),
  created_at: z.string(),
  updated_at: z.string(),
  last_activity_at: z.string(),
});

export const CloneCredentialSchema = z.object({ username: z.string(), password: z.string(), expires_at: z.string(), repo_url: z.string() });
