import { z } from 'zod';
import { branchNameProblem } from '../domain/refs.js';
import { time, UNSTORABLE, uuid } from './common.js';
import { ChangeRequestShareSchema, ModelCostSchema, MoneySchema } from './cost.js';

/** Sessions (contracts.md "Sessions"; docs/sessions.md). Commands reject unknown fields. */

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
  /**
   * A prompt follows this create (`svc sessions chat --new`): refused now, 409 `no_model`
   * naming what to set, when no model could answer it, before any sandbox boots.
   */
  expect_prompt: z.boolean().optional(),
});
export type CreateSessionInput = z.input<typeof CreateSessionBody>;

/** `session_id`: the agent runtime's conversation to continue (default: a new one). */
export const PromptSessionBody = z.strictObject({ text: text(1, 100_000), session_id: z.string().min(1).max(256).regex(/^[A-Za-z0-9_-]+$/).optional() });
export const AbortSessionBody = z.strictObject({});
/** `fresh`: the spec's plain restart (a fresh clone; the saved workspace and conversation are discarded). */
export const RestartSessionBody = z.strictObject({ fresh: z.boolean().optional() });
/** What a stop saved (pause and resume, docs/sessions.md), GET of one session only. */
export const SessionSavedSchema = z.strictObject({
  wip_sha: z.string().nullable(),
  head_sha: z.string().nullable(),
  skipped: z.array(z.strictObject({ path: z.string(), bytes: z.number().int(), reason: z.string() })),
  conversation: z.boolean(),
  conversation_bytes: z.number().int(),
  runtime_version: z.string().nullable(),
  saved_at: time,
});

export const SESSION_STATUSES = ['queued', 'branching', 'provisioning', 'running', 'stopped', 'failed', 'completed'] as const;
export const SessionStatusSchema = z.enum(SESSION_STATUSES);

export const ListSessionsQuery = z.object({
  status: z.enum([...SESSION_STATUSES, 'all']).default('all'),
});

export const SessionSandboxSchema = z.strictObject({
  sandbox_id: uuid,
  state: z.enum(['provisioning', 'active', 'stopped', 'error', 'archived']),
  provider: z.string(),
  /** This server's agent proxy for the session, while the sandbox is active. */
  url: z.string().nullable(),
});

/**
 * Tokens the model reported for the session's calls through the gateway, what they cost
 * (per currency; unpriced tokens counted apart), its sandboxes' running time, and how it
 * splits across the CRs of its branch (contracts/cost.ts).
 */
export const SessionUsageSchema = z.strictObject({
  input_tokens: z.number().int(),
  output_tokens: z.number().int(),
  requests: z.number().int(),
  money: MoneySchema,
  unpriced_tokens: z.number().int(),
  by_model: z.array(ModelCostSchema),
  sandbox_seconds: z.number(),
  cpu_seconds: z.number().nullable(),
  /** The agent uses a model of its own provider: its calls bypass the gateway and are not counted. */
  unmetered: z.boolean(),
  by_change_request: z.array(ChangeRequestShareSchema),
});

/** The Session JSON of every response. `branch` equals `session_id`. */
export const SessionSchema = z.strictObject({
  session_id: uuid,
  project_id: uuid,
  account_id: uuid,
  status: SessionStatusSchema,
  /** The agent runtime's readiness (`agent` stays the agent's name). */
  agent_state: z.enum(['starting', 'ready', 'error', 'stopped']),
  base_ref: z.string(),
  branch: z.string(),
  agent: z.string(),
  model: z.string().nullable(),
  /** Its first prompt (at create, or the first sent to its agent), cut to 200 characters; absent before one. */
  title: z.string().optional(),
  sandbox: SessionSandboxSchema.nullable(),
  /** `log`: the failed sandbox's last output, secrets redacted (GET of one session only). */
  error: z.strictObject({ code: z.string(), message: z.string(), at: time, log: z.string().optional() }).nullable(),
  /** Tokens the model reported for this session's calls through the gateway (GET of one session only). */
  usage: SessionUsageSchema.optional(),
  saved: SessionSavedSchema.nullable().optional(),
  created_by: uuid,
  created_at: time,
  updated_at: time,
  last_activity_at: time,
});
export type Session = z.infer<typeof SessionSchema>;

export const OneSession = z.strictObject({ session: SessionSchema });
export const SessionList = z.strictObject({ sessions: z.array(SessionSchema) });

/** `PUT …/sessions/:id/wip`: what the server kept of a checkpoint. */
export const CheckpointAcceptedSchema = z.strictObject({
  wip_sha: z.string().nullable(),
  skipped: z.array(z.strictObject({ path: z.string(), bytes: z.number().int(), reason: z.string() })),
  conversation: z.boolean(),
});

/** `GET .../git/clone-credential`: a short-lived git credential for a live sandbox. */
export const CloneCredentialSchema = z.strictObject({ username: z.string(), password: z.string(), expires_at: time, repo_url: z.string() });

/** `POST .../prompt` (202): the agent runtime's session the prompt went to, and whether it was new. */
export const PromptResultSchema = z.strictObject({ session_id: z.string(), created: z.boolean() });
/** `POST .../abort`: the run stopped through the runtime's API, or by restarting it. */
export const AbortResultSchema = z.strictObject({ session_id: z.string(), aborted: z.boolean(), method: z.enum(['api', 'killed']) });
