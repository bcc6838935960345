import { z } from 'zod';
import { DomainError } from '../../domain/errors.js';
import { liveSandbox, type Session } from '../../domain/session/index.js';
import type { Config } from '../../infra/config.js';
import { reposDirOf } from '../../infra/git/managed-repo.js';
import { sessionStateStore, type SessionStateStore } from '../../infra/git/session-state-store.js';
import { bundleHeadProblem, encodeFrame, FrameError, readFrameStream, type ArchivedFile, type StreamedFrame } from '../../lib/checkpoint-frame.js';
import { sandboxFetch } from '../../lib/sandbox-dial.js';
import { savedStateQueries, type SavedStateRow } from '../../sql/queries/session-saved-state.js';
import { serviceKeyOf } from './credentials.js';
import { type SessionDeps } from './deps.js';
import { handleSessionCommand, loadSession } from './handle.js';
import { nowOf } from '../../lib/clock.js';

/**
 * Pause and resume (docs/sessions.md "Pause and resume"): an extension of
 * the spec's fresh clone. A stop first asks the sandbox's daemon for a final checkpoint
 * (its uncommitted and untracked files as a commit, and the runtime's conversation), and
 * the daemon checkpoints on its own at most every SVC_SESSION_WIP_CHECKPOINT_SECONDS
 * through its gateway. The workspace goes to the project's state store (never served),
 * the conversation, sealed with the server's secret box, to `session_saved_state`. A new
 * sandbox of the session asks for both before its agent starts and restores them inside
 * itself; the server never unpacks them.
 */
export const storeOf = (config: Config): SessionStateStore => sessionStateStore(reposDirOf(config));

/** What the daemon learns from its environment: its checkpoint interval and size cap. */
export const checkpointEnv = (config: Config): Record<string, string> => ({
  SVC_WIP_CHECKPOINT_SECONDS: String(config.SVC_SESSION_WIP_CHECKPOINT_SECONDS),
  SVC_WIP_MAX_BYTES: String(config.SVC_SESSION_WIP_MAX_BYTES),
});

/** The conversation archive may be as large as the cap; the bundle also carries the branch's history. */
export const checkpointBodyLimit = (config: Config): number => 2 * config.SVC_SESSION_WIP_MAX_BYTES + 64 * 1024 * 1024;

const sha = z.string().regex(/^[0-9a-f]{40}([0-9a-f]{24})?$/);
const Skipped = z.array(z.strictObject({ path: z.string().max(4096), bytes: z.number().int().min(0), reason: z.string().max(200) })).max(10_000);
const CheckpointHeader = z.object({
  wip_sha: sha.nullable(),
  head_sha: sha.nullable(),
  skipped: Skipped,
  runtime_version: z.string().max(200).nullable(),
  workspace: z.string().max(4096).nullable().optional(),
  bundle_bytes: z.number().int().min(0),
  conversation_bytes: z.number().int().min(0),
});
const ConversationFiles = z.array(z.strictObject({ path: z.string().min(1).max(1024), data: z.string() })).max(100_000);

const badCheckpoint = (message: string) => new DomainError('validation', 'Bad checkpoint', message);
const aadOf = (sessionId: string) => `session-conversation:${sessionId}`;

/** A relative path under the runtime's data dir: no `..`, not absolute, no auth file. */
export function conversationPathProblem(p: string): string | null {
  if (p.startsWith('/') || p.includes('\0') || p.split('/').some((seg) => seg === '' || seg === '.' || seg === '..')) return 'not a plain relative path';
  if (/(^|\/)(mcp-)?auth\.json$/.test(p)) return "the runtime's auth files are never saved";
  return null;
}

export interface CheckpointAccepted {
  wip_sha: string | null;
  skipped: { path: string; bytes: number; reason: string }[];
  conversation: boolean;
}

/**
 * `PUT …/sessions/:id/wip` as the route takes it: the body read as it streams in, the
 * bundle straight to a file of the state store (never whole in memory), under the
 * checkpoint's cap (413 past it, before the bundle's first byte when the header says so).
 * Only the conversation archive, itself capped, is held in memory.
 */
export async function acceptCheckpointStream(deps: SessionDeps, who: { session_id: string; project_id: string }, body: NodeJS.ReadableStream): Promise<CheckpointAccepted> {
  const store = storeOf(deps.config);
  const incoming = await store.incoming(who.project_id);
  let frame: StreamedFrame;
  try {
    frame = await readFrameStream(body, { maxBytes: checkpointBodyLimit(deps.config), maxConversation: deps.config.SVC_SESSION_WIP_MAX_BYTES, openBundle: incoming.open, bundleStart: bundleHeadProblem });
  } catch (err) {
    await incoming.discard();
    if (err instanceof FrameError && err.tooLarge) throw new DomainError('payload_too_large', 'Payload too large', `Not accepted: ${err.message}.`);
    throw badCheckpoint(`Not a checkpoint: ${(err as Error).message}.`);
  }
  try {
    return await settleCheckpoint(deps, who, frame, (sha) => store.acceptFile(who.project_id, who.session_id, incoming.file, sha));
  } finally {
    await incoming.discard();
  }
}

async function settleCheckpoint(
  deps: SessionDeps,
  who: { session_id: string; project_id: string },
  parts: StreamedFrame,
  acceptBundle: (sha: string) => Promise<void>,
): Promise<CheckpointAccepted> {
  const parsed = CheckpointHeader.safeParse(parts.header);
  if (!parsed.success) throw badCheckpoint('The checkpoint header is malformed.');
  const h = parsed.data;
  if ((h.wip_sha === null) !== (parts.bundleBytes === 0)) throw badCheckpoint('A checkpoint names a commit exactly when it carries a bundle.');
  let conversation: string | null = null;
  if (parts.conversation.length > 0) {
    if (parts.conversation.length > deps.config.SVC_SESSION_WIP_MAX_BYTES) throw badCheckpoint('The conversation is larger than the cap.');
    let files: ArchivedFile[];
    try {
      files = ConversationFiles.parse(JSON.parse(parts.conversation.toString('utf8')));
    } catch {
      throw badCheckpoint('The conversation archive is malformed.');
    }
    for (const f of files) if (conversationPathProblem(f.path)) throw badCheckpoint(`Conversation file ${JSON.stringify(f.path)}: ${conversationPathProblem(f.path)}.`);
    conversation = deps.secrets.seal(parts.conversation.toString('base64'), aadOf(who.session_id));
  }
  if (h.wip_sha) await acceptBundle(h.wip_sha);
  else await storeOf(deps.config).remove(who.project_id, who.session_id);
  await deps.db.run(
    savedStateQueries.upsert({
      session_id: who.session_id,
      project_id: who.project_id,
      wip_sha: h.wip_sha,
      head_sha: h.head_sha,
      skipped: h.skipped,
      conversation,
      conversation_bytes: parts.conversation.length,
      runtime_version: h.runtime_version,
      workspace: h.workspace ?? null,
    }),
  );
  return { wip_sha: h.wip_sha, skipped: h.skipped, conversation: conversation !== null };
}

/**
 * `GET …/sessions/:id/wip`: the saved state for the session's new sandbox, as one frame,
 * or null when nothing is saved. The conversation comes only when the runtime is the
 * version that wrote it; otherwise the session resumes without it, and says so.
 */
export async function restoreFrame(deps: SessionDeps, who: { session_id: string; project_id: string; sandbox_id: string }, runtimeVersion: string | null): Promise<Buffer | null> {
  const row = await deps.db.one<SavedStateRow>(savedStateQueries.bySession(who.session_id));
  if (!row || row.project_id !== who.project_id) return null;
  const bundle = row.wip_sha ? await storeOf(deps.config).bundle(who.project_id, who.session_id) : null;
  let conversation = Buffer.alloc(0);
  let status: 'restored' | 'version_mismatch' | 'none' = 'none';
  let message: string | null = null;
  if (row.conversation) {
    if (row.runtime_version === runtimeVersion) {
      conversation = Buffer.from(deps.secrets.open(row.conversation, aadOf(who.session_id)), 'base64');
      status = 'restored';
    } else {
      status = 'version_mismatch';
      message = `The conversation was saved by runtime ${row.runtime_version ?? 'unknown'} and this sandbox runs ${runtimeVersion ?? 'unknown'}: the session resumes without it.`;
    }
  }
  const wipSha = bundle ? row.wip_sha : null;
  await handleSessionCommand(deps.db, who.session_id, (s) =>
    s ? { type: 'RecordResumed', data: { sandbox_id: who.sandbox_id, wip_sha: wipSha, conversation: status }, meta: { actor: s.created_by, now: nowOf(deps) } } : null,
  );
  return encodeFrame({ wip_sha: wipSha, head_sha: row.head_sha, workspace: row.workspace, conversation: status, message }, bundle ?? Buffer.alloc(0), conversation);
}

/**
 * Before a stop (or a restart of a running session): the daemon's final checkpoint, which
 * it sends through its gateway like any other. Never fails the stop: a sandbox that does
 * not answer keeps its last checkpoint. Then `SessionPaused` says what is saved.
 */
export async function pauseBeforeStop(deps: SessionDeps, session: Session): Promise<void> {
  const sb = liveSandbox(session);
  if (session.status === 'running' && sb?.state === 'active' && sb.url) {
    try {
      const key = await serviceKeyOf(deps.db, deps.secrets, sb.sandbox_id);
      if (key) {
        const res = await sandboxFetch(sb.url, '/svc/checkpoint', {
          method: 'POST',
          headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
          body: JSON.stringify({ final: true }),
          signal: AbortSignal.timeout(120_000),
        });
        const text = await res.text();
        if (!res.ok) deps.logger.warn({ session_id: session.session_id, status: res.status, body: text.slice(0, 300) }, 'final checkpoint refused; the last one stays');
      }
    } catch (err) {
      deps.logger.warn({ session_id: session.session_id, err: (err as Error).message }, 'final checkpoint failed; the last one stays');
    }
  }
  const row = await deps.db.one<SavedStateRow>(savedStateQueries.bySession(session.session_id));
  if (!row) return;
  await handleSessionCommand(deps.db, session.session_id, (s) =>
    s && !s.removed
      ? { type: 'RecordPaused', data: { wip_sha: row.wip_sha, skipped: row.skipped, conversation: row.conversation !== null }, meta: { actor: s.created_by, now: nowOf(deps) } }
      : null,
  ).catch((err: Error) => deps.logger.warn({ session_id: session.session_id, err: err.message }, 'pause not recorded'));
}

/** Removal and `restart --fresh`: the hidden ref and the saved row go. */
export async function dropSavedState(deps: SessionDeps, projectId: string, sessionId: string): Promise<void> {
  await storeOf(deps.config).remove(projectId, sessionId);
  await deps.db.run(savedStateQueries.remove(sessionId));
}

/** What `svc sessions info` and the session page show. */
export interface SavedSummary {
  wip_sha: string | null;
  head_sha: string | null;
  skipped: { path: string; bytes: number; reason: string }[];
  conversation: boolean;
  conversation_bytes: number;
  runtime_version: string | null;
  saved_at: string;
}

export async function savedSummary(deps: Pick<SessionDeps, 'db'>, sessionId: string): Promise<SavedSummary | null> {
  const r = await deps.db.one<Omit<SavedStateRow, 'conversation'> & { has_conversation: boolean }>(savedStateQueries.summary(sessionId));
  if (!r) return null;
  return {
    wip_sha: r.wip_sha,
    head_sha: r.head_sha,
    skipped: r.skipped,
    conversation: r.has_conversation,
    conversation_bytes: r.conversation_bytes,
    runtime_version: r.runtime_version,
    saved_at: new Date(r.saved_at).toISOString(),
  };
}

/** The pause step of a stop or restart: only for a running session of this project (else the command decides). */
export async function pauseIfRunning(deps: SessionDeps, projectId: string, sessionId: string): Promise<void> {
  const { state } = await loadSession(deps.db, sessionId);
  if (!state || state.removed || state.project_id !== projectId || state.status !== 'running') return;
  await pauseBeforeStop(deps, state);
}
