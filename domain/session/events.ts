import { z } from 'zod';
import { eventCatalog, type EventOf } from '../event-catalog.js';

/**
 * The session stream's events. Types are versioned by name; times come from the
 * command's clock, so replaying the log gives the same rows.
 */
const uuid = z.uuid();
const time = z.iso.datetime({ offset: true });
const errorInfo = z.object({ code: z.string().min(1), message: z.string(), at: time });

export const SessionCreated = z.object({
  session_id: uuid,
  account_id: uuid,
  project_id: uuid,
  base_ref: z.string().min(1),
  agent: z.string().min(1),
  model: z.string().nullable(),
  prompt: z.string().nullable(),
  trigger: z.string().nullable(),
  created_by: uuid,
  created_at: time,
});
export const SessionBranchCut = z.object({ base_commit_sha: z.string().regex(/^[0-9a-f]{40}([0-9a-f]{24})?$/), at: time });
export const SandboxRequested = z.object({ sandbox_id: uuid, provider: z.string().min(1), at: time });
export const SandboxActive = z.object({ sandbox_id: uuid, url: z.string().min(1), ref: z.string(), at: time });
export const SandboxStopped = z.object({ sandbox_id: uuid, at: time });
export const SandboxErrored = z.object({ sandbox_id: uuid, error: errorInfo, at: time });
export const SandboxArchived = z.object({ sandbox_id: uuid, at: time });
/** The egress proxy refused a connection of the sandbox (recorded at most once per host per minute). */
export const SessionEgressRefused = z.object({ sandbox_id: uuid, host: z.string().min(1).max(300), port: z.number().int().min(0).max(65535), reason: z.string().max(500), at: time });
export const SessionRunning = z.object({ sandbox_id: uuid, at: time });
export const SessionStopped = z.object({ reason: z.enum(['user', 'idle', 'lost']), by: uuid.nullable(), at: time });
export const SessionFailed = z.object({ error: errorInfo, at: time });
export const SessionRestarted = z.object({ by: uuid, at: time });
export const SessionRemoved = z.object({ by: uuid, at: time });
export const SessionActivity = z.object({ at: time });
/** The runtime behind the session's current sandbox answered (agent_state `ready`). */
export const SessionAgentReady = z.object({ sandbox_id: uuid, at: time });
/** The runtime never answered in time (agent_state `error`); the session stays running. */
export const SessionAgentFailed = z.object({ sandbox_id: uuid, error: errorInfo, at: time });
const sha = z.string().regex(/^[0-9a-f]{40}([0-9a-f]{24})?$/);
/** What a stop saved of the sandbox (pause and resume, docs/sessions.md): the wip commit, what the size cap left out, whether a conversation was kept. */
export const SessionPaused = z.object({
  wip_sha: sha.nullable(),
  skipped: z.array(z.object({ path: z.string(), bytes: z.number().int().min(0), reason: z.string() })),
  conversation: z.boolean(),
  at: time,
});
/** A new sandbox restored the saved state (`conversation`: restored, or why not). */
export const SessionResumed = z.object({ sandbox_id: uuid, wip_sha: sha.nullable(), conversation: z.enum(['restored', 'version_mismatch', 'none']), at: time });

export const sessionEventSchemas = {
  SessionCreated,
  SessionBranchCut,
  SandboxRequested,
  SandboxActive,
  SandboxStopped,
  SandboxErrored,
  SandboxArchived,
  SessionEgressRefused,
  SessionRunning,
  SessionStopped,
  SessionFailed,
  SessionRestarted,
  SessionRemoved,
  SessionActivity,
  SessionAgentReady,
  SessionAgentFailed,
  SessionPaused,
  SessionResumed,
} as const;

const catalog = eventCatalog('session', sessionEventSchemas);

export type SessionEvent = EventOf<typeof sessionEventSchemas>;
export const parseSessionEvent = catalog.parse;

export const SESSION_STREAM_TYPE = 'session';
export const sessionStreamId = (sessionId: string): string => `session-${sessionId}`;
