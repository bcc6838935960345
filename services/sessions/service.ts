import { sandboxFetch } from '../../lib/sandbox-dial.js';
import { randomUUID } from 'node:crypto';
import { DomainError, isErrorReason, notFound } from '../../domain/errors.js';
import { liveSandbox, LIVE_STATUSES, type Session, type SessionState } from '../../domain/session/index.js';
import type { Executor } from '../../infra/db/db.js';
import { readStream } from '../../infra/event-store.js';
import { assertBranchName } from '../../domain/refs.js';
import type { ProjectRecord } from '../../domain/project.js';
import { assertWithinBudgets } from '../budgets/service.js';
import type { SandboxHandle } from '../../infra/sandbox/port.js';
import { sessionQueries } from '../../sql/queries/sessions.js';
import { sessionStreamId } from '../../domain/session/index.js';
import { assertKnownAgent } from './agents.js';
import { revokeSessionCredentials, serviceKeyOf } from './credentials.js';
import { activityIntervalMs, type SessionDeps } from './deps.js';
import { handleSessionCommand } from './handle.js';
import { dispatchProvision, dispatchStop } from './jobs.js';
import { viewOfRow, viewOfState, type SessionView } from './view.js';
import { sessionCostUsage } from '../cost/cost.js';
import { assertModelOffered } from './model-choice.js';
import { assertModelAvailable } from './prompt-guard.js';
import { dropSavedState, pauseIfRunning, savedSummary } from './saved-state.js';
import { claimPoolSandbox } from './pool.js';
import { nowOf } from '../../lib/clock.js';

export type { SessionDeps } from './deps.js';
export type { SessionView } from './view.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
export const DEFAULT_AGENT = 'build';

export interface CreateSessionInput {
  project: ProjectRecord;
  userId: string;
  agent?: string | undefined;
  model?: string | undefined;
  baseRef?: string | undefined;
  prompt?: string | undefined;
  /** A prompt follows at once (a chat's first message): the model is checked as for `prompt`. */
  expectPrompt?: boolean;
  /** What spawned it (a trigger's slug, an app); null for an interactive create. */
  trigger?: string | undefined;
}

const publicUrl = (deps: SessionDeps) => (deps.config.SVC_PUBLIC_URL ?? '').replace(/\/+$/, '');

export const tooManySessions = (limit: number) =>
  new DomainError('rate_limited', 'Too many sessions', `This account already runs its limit of ${limit} live sessions; stop one first.`, { limit });

/**
 * Holds the account row until the transaction ends, so creates (and restarts) of one
 * account are decided one after another and the cap can never be overshot.
 */
async function admitLive(tx: Executor, deps: SessionDeps, accountId: string, alreadyLive: boolean): Promise<void> {
  const acct = await tx.one<{ session_cap: number | null }>(sessionQueries.lockAccountCap(accountId));
  if (!acct) throw notFound('Account');
  const cap = acct.session_cap ?? deps.config.SVC_SESSION_CAP;
  const { n } = (await tx.one<{ n: number }>(sessionQueries.liveCount(accountId)))!;
  if (n - (alreadyLive ? 1 : 0) >= cap) throw tooManySessions(cap);
}

/**
 * Creates a session: admitted against the account's cap and recorded `provisioning` in
 * one transaction, then handed to the `session.provision` worker. Used by the REST route
 * and by anything else that spawns sessions (triggers, apps).
 */
export async function createSession(deps: SessionDeps, input: CreateSessionInput): Promise<SessionView> {
  const baseRef = assertBranchName(input.baseRef ?? input.project.default_branch, 'base_ref');
  if (input.agent !== undefined) await assertKnownAgent(deps.repos, input.project, baseRef, input.agent);
  assertModelOffered(deps.config, input.model);
  // A first prompt no model can answer would be lost in the sandbox: refused now, like any
  // prompt, and before a sandbox boots that would count against the cap for nothing.
  if (input.prompt !== undefined || input.expectPrompt) await assertModelAvailable(deps, input.project, input.model ?? null);
  // A spent budget a person set refuses new work (429), a trigger's fires included.
  await assertWithinBudgets(deps, input.project, input.trigger ? `trigger ${input.trigger}` : 'sessions', input.userId);
  const sessionId = randomUUID();
  const { session } = await handleSessionCommand(
    deps.db,
    sessionId,
    () => ({
      type: 'CreateSession',
      data: {
        session_id: sessionId,
        account_id: input.project.account_id,
        project_id: input.project.project_id,
        base_ref: baseRef,
        agent: input.agent ?? DEFAULT_AGENT,
        model: input.model ?? null,
        prompt: input.prompt ?? null,
        trigger: input.trigger ?? null,
      },
      meta: { actor: input.userId, now: nowOf(deps) },
    }),
    {
      before: async (tx) => {
        await admitLive(tx, deps, input.project.account_id, false);
        if (input.prompt) await tx.run(sessionQueries.noteTitle(sessionId, input.project.project_id, titleOf(input.prompt)));
        // A prepared sandbox of the project, when one matches (pool.ts); else the worker starts one cold.
        await claimPoolSandbox(tx, deps, { project: input.project, sessionId, model: input.model ?? null });
      },
    },
  );
  await dispatchProvision(deps, sessionId);
  return viewOfState(session, publicUrl(deps));
}

export async function findSession(deps: SessionDeps, projectId: string, sessionId: string): Promise<SessionView> {
  const row = UUID.test(sessionId) ? await deps.db.one(sessionQueries.byId(projectId, sessionId.toLowerCase())) : undefined;
  if (!row) throw notFound('Session');
  return viewOfRow(row, publicUrl(deps));
}

/** One session with what only its own page shows: the model usage and a failed sandbox's log tail. */
export async function sessionDetail(deps: SessionDeps, projectId: string, sessionId: string): Promise<SessionView> {
  const v = await findSession(deps, projectId, sessionId);
  const usage = await sessionCostUsage(deps, projectId, v.session_id);
  const failure = v.error ? await deps.db.one<{ log: string }>(sessionQueries.failureLog(v.session_id)) : undefined;
  return { ...v, error: v.error && failure ? { ...v.error, log: failure.log } : v.error, usage, saved: await savedSummary(deps, v.session_id) };
}

export async function listSessions(deps: SessionDeps, projectId: string, status: string | null, limit = 1000): Promise<SessionView[]> {
  const rows = await deps.db.rows(sessionQueries.list(projectId, status, limit));
  return rows.map((r) => viewOfRow(r, publicUrl(deps)));
}

export async function sessionHistory(deps: SessionDeps, projectId: string, sessionId: string) {
  const s = await findSession(deps, projectId, sessionId);
  const events = await readStream(deps.db, sessionStreamId(s.session_id));
  return events.map((e) => ({
    stream_position: e.stream_position,
    global_position: e.global_position,
    type: e.type,
    data: redactEventData(e.type, e.data),
    actor: e.metadata.actor,
    recorded_at: new Date(e.recorded_at).toISOString(),
  }));
}

/** The daemon's internal address and provider identity are the server's business only. */
function redactEventData(type: string, data: unknown): unknown {
  if (type !== 'SandboxActive' || typeof data !== 'object' || data === null) return data;
  const { url: _u, ref: _r, ...rest } = data as Record<string, unknown>;
  return rest;
}

const handleOf = (s: Session): SandboxHandle | null => {
  const sb = liveSandbox(s);
  return sb ? { sandboxId: sb.sandbox_id, provider: sb.provider as SandboxHandle['provider'], url: sb.url ?? '', ref: sb.ref ?? '' } : null;
};

/** Scoped to the project: another project's session id is a 404. */
function inProject(projectId: string) {
  return (s: SessionState): Session => {
    if (!s || s.removed || s.project_id !== projectId) throw notFound('Session');
    return s;
  };
}

/**
 * Stops a session: its credentials are revoked and `stopped` recorded in one transaction
 * (the old tokens answer 401 from then on); the sandbox is torn down by `session.stop`.
 */
export async function stopSession(
  deps: SessionDeps,
  projectId: string,
  sessionId: string,
  actor: string,
  reason: 'user' | 'idle' | 'lost' = 'user',
): Promise<SessionView> {
  const scoped = inProject(projectId);
  let before: Session | null = null;
  // Pause and resume: a stop by a person or the idle sweep first saves what the branch does not hold.
  if (reason !== 'lost') await pauseIfRunning(deps, projectId, sessionId);
  const { session, appended } = await handleSessionCommand(
    deps.db,
    sessionId,
    (s) => {
      before = scoped(s);
      return { type: 'StopSession', data: { reason }, meta: { actor, now: nowOf(deps) } };
    },
    { inTx: async (tx, _s, appended) => void (appended.length && (await revokeSessionCredentials(tx, sessionId))) },
  );
  const handle = before ? handleOf(before) : null;
  if (appended.length && handle) await dispatchStop(deps, { session_id: sessionId, sandbox: handle });
  return viewOfState(session, publicUrl(deps));
}

/** A new sandbox with new credentials; the old ones are revoked at once. */
export async function restartSession(deps: SessionDeps, projectId: string, sessionId: string, actor: string, opts: { fresh?: boolean } = {}): Promise<SessionView> {
  const scoped = inProject(projectId);
  let before: Session | null = null;
  // `--fresh`: the spec's plain restart, the saved state discarded; otherwise a running session is paused first.
  if (opts.fresh) await findSession(deps, projectId, sessionId).then(() => dropSavedState(deps, projectId, sessionId));
  else await pauseIfRunning(deps, projectId, sessionId);
  const { session } = await handleSessionCommand(
    deps.db,
    sessionId,
    (s) => {
      before = scoped(s);
      return { type: 'RestartSession', meta: { actor, now: nowOf(deps) } };
    },
    {
      before: async (tx, s) => {
        const own = scoped(s);
        if (own.status !== 'provisioning') await admitLive(tx, deps, own.account_id, LIVE_STATUSES.includes(own.status));
      },
      inTx: (tx) => revokeSessionCredentials(tx, sessionId).then(() => undefined),
    },
  );
  const handle = before ? handleOf(before) : null;
  if (handle) await dispatchStop(deps, { session_id: sessionId, sandbox: handle });
  await dispatchProvision(deps, sessionId);
  return viewOfState(session, publicUrl(deps));
}

/** Stops and forgets the session (its row goes; CRs keep no origin). The branch stays. */
export async function removeSession(deps: SessionDeps, projectId: string, sessionId: string, actor: string): Promise<void> {
  const scoped = inProject(projectId);
  let before: Session | null = null;
  await handleSessionCommand(
    deps.db,
    sessionId,
    (s) => {
      before = scoped(s);
      return { type: 'RemoveSession', meta: { actor, now: nowOf(deps) } };
    },
    { inTx: (tx) => revokeSessionCredentials(tx, sessionId).then(() => undefined) },
  );
  const handle = before ? handleOf(before) : null;
  if (handle) await dispatchStop(deps, { session_id: sessionId, sandbox: handle });
  await dropSavedState(deps, projectId, sessionId);
  await deps.db.run(sessionQueries.dropTitle(sessionId));
}

/** A prompt as a one-line title: whitespace folded, at most 200 characters. */
export function titleOf(prompt: string): string {
  const line = prompt.replace(/\s+/g, ' ').trim();
  return line.length > 200 ? `${line.slice(0, 199)}…` : line;
}

export interface LiveTarget {
  session: SessionView;
  /** The daemon's base URL (internal). */
  url: string;
  /** The sandbox's SVC_TOKEN (never leaves the server). */
  key: string;
}

/** A running session's daemon, or 409 when it is not running. */
export async function liveTarget(deps: SessionDeps, projectId: string, sessionId: string): Promise<LiveTarget> {
  const row = UUID.test(sessionId) ? await deps.db.one<Record<string, unknown>>(sessionQueries.byId(projectId, sessionId.toLowerCase())) : undefined;
  if (!row) throw notFound('Session');
  const session = viewOfRow(row, publicUrl(deps));
  const key = row.sb_state === 'active' && row.status === 'running' ? await serviceKeyOf(deps.db, deps.secrets, row.sb_id as string) : null;
  if (!key || !row.sb_url) {
    throw new DomainError('conflict', 'Session not running', `The session is ${session.status}; it must be running.`, { status: session.status });
  }
  return { session, url: row.sb_url as string, key };
}

/** Records activity (proxied requests, prompts) at most once per interval per session. */
export async function touchSession(deps: SessionDeps, sessionId: string): Promise<void> {
  const touched = deps.activity;
  const interval = activityIntervalMs(deps.config);
  const now = nowOf(deps);
  const last = touched.get(sessionId) ?? 0;
  if (now.getTime() - last < interval) return;
  touched.set(sessionId, now.getTime());
  if (touched.size > 10_000) touched.clear();
  await handleSessionCommand(deps.db, sessionId, (s) => (s ? { type: 'RecordActivity', data: { min_interval_ms: interval }, meta: { actor: s.created_by, now } } : null)).catch(
    (err: Error) => deps.logger.debug({ err: err.message, session_id: sessionId }, 'activity not recorded'),
  );
}

/** `POST /svc/prompt|abort|env|refresh` on the daemon, with the sandbox's key. */
export async function controlCall(deps: SessionDeps, projectId: string, sessionId: string, path: '/svc/prompt' | '/svc/abort' | '/svc/env' | '/svc/refresh', body: unknown) {
  const t = await liveTarget(deps, projectId, sessionId);
  let res: Response;
  try {
    res = await sandboxFetch(t.url, path, {
      method: 'POST',
      headers: { authorization: `Bearer ${t.key}`, 'content-type': 'application/json' },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(30_000),
    });
  } catch (err) {
    throw new DomainError('unavailable', 'Sandbox unavailable', `The sandbox did not answer: ${(err as Error).message}`);
  }
  const text = await res.text();
  let json: unknown = null;
  try {
    json = text ? JSON.parse(text) : null;
  } catch {
    json = null;
  }
  if (path === '/svc/prompt' && res.ok) {
    await touchSession(deps, t.session.session_id);
    const text = (body as { text?: unknown }).text;
    if (t.session.title === undefined && typeof text === 'string' && text.trim()) await deps.db.run(sessionQueries.noteTitle(t.session.session_id, t.session.project_id, titleOf(text)));
  }
  if (!res.ok) throw daemonRefusal(res.status, json);
  return json;
}

/**
 * A refusal by a sandbox's daemon as the API's error. The daemon runs beside the agent's
 * code, so what it says is untrusted: its reason passes only if it is one of the closed
 * list's (the daemon's own are), anything else is a plain refusal; its code is ours.
 */
export function daemonRefusal(status: number, json: unknown): DomainError {
  const body = json !== null && typeof json === 'object' ? (json as { error?: unknown; message?: unknown }) : {};
  const message = typeof body.message === 'string' ? body.message : `The sandbox answered ${status}.`;
  if (status >= 500) return new DomainError('unavailable', 'Sandbox unavailable', message);
  return new DomainError(status === 409 ? 'conflict' : 'validation', isErrorReason(body.error) ? body.error : 'Refused', message);
}

/** Of `sandboxIds`, those no longer serving a running session: their proxied sockets are cut. */
export async function sandboxesNotLive(db: Executor, sandboxIds: string[]): Promise<Set<string>> {
  if (sandboxIds.length === 0) return new Set();
  return new Set((await db.rows<{ sandbox_id: string }>(sessionQueries.sandboxesNotLiveAmong(sandboxIds))).map((r) => r.sandbox_id));
}
