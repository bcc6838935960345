import type { Executor } from '../infra/db/db.js';
import type { StoredEvent } from '../infra/event-store.js';
import type { Projection, StreamRef } from '../infra/event-sourcing/port.js';
import {
  currentSandbox,
  evolve,
  parseSessionEvent,
  SESSION_STREAM_TYPE,
  sessionStreamId,
  type Session,
  type SessionState,
} from '../domain/session/index.js';
import { sessionQueries } from '../sql/queries/sessions.js';

/**
 * The `project_sessions` and `session_sandboxes` projections: one row per session (none
 * once removed) and one per sandbox incarnation, both pure functions of the session
 * stream. The inline projector and the rebuild share `toRows`.
 */
export const agentPath = (projectId: string, sessionId: string) => `/v1/projects/${projectId}/sessions/${sessionId}/agent/`;

export function toRows(s: Session, version: number) {
  const cur = currentSandbox(s);
  const session = {
    session_id: s.session_id,
    account_id: s.account_id,
    project_id: s.project_id,
    status: s.status,
    base_ref: s.base_ref,
    branch_name: s.branch,
    agent_name: s.agent,
    agent_model: s.model,
    sandbox_url: cur?.state === 'active' ? agentPath(s.project_id, s.session_id) : null,
    created_by: s.created_by,
    created_at: s.created_at,
    updated_at: s.updated_at,
    stream_version: version,
    error: s.error,
    base_commit_sha: s.base_commit_sha,
    trigger: s.trigger,
    last_activity_at: s.last_activity_at,
    agent_state: s.agent_state,
  };
  const sandboxes = s.sandboxes.map((sb) => ({
    sandbox_id: sb.sandbox_id,
    session_id: sb.session_id,
    provider: sb.provider,
    state: sb.state,
    url: sb.url,
    created_at: sb.created_at,
    updated_at: sb.updated_at,
    error: sb.error,
    ref: sb.ref,
  }));
  return { session, sandboxes };
}

/** Inline: in the append transaction, with the state after the new events. */
export async function projectSession(tx: Executor, s: Session, version: number): Promise<void> {
  if (s.removed) {
    await tx.run(sessionQueries.delete(s.session_id)); // sandboxes cascade; CRs keep the id as null
    return;
  }
  const rows = toRows(s, version);
  await tx.run(sessionQueries.upsert(rows.session));
  if (rows.sandboxes.length) await tx.run(sessionQueries.upsertSandboxes(rows.sandboxes));
}

/** A session's stream, as the command handler takes it (its project comes from the state: `sessionDecider.projectOf`). */
export const sessionStream = (sessionId: string): StreamRef => ({ id: sessionStreamId(sessionId), type: SESSION_STREAM_TYPE, projectId: null });

/** The projection of the session aggregate's writes: its statements, in the append's transaction. */
export const sessionProjection: Projection<SessionState> = {
  project: (tx, s, version) => projectSession(tx, s!, version),
};

/** Folds session events in log order, one state per stream (rebuilds). */
export class SessionFolder {
  readonly streamType = SESSION_STREAM_TYPE;
  private readonly states = new Map<string, { state: SessionState; version: number }>();

  apply(e: StoredEvent): void {
    const prev = this.states.get(e.stream_id) ?? { state: null, version: 0 };
    this.states.set(e.stream_id, { state: evolve(prev.state, parseSessionEvent(e)), version: e.stream_position });
  }

  rows() {
    const sessions: ReturnType<typeof toRows>['session'][] = [];
    const sandboxes: ReturnType<typeof toRows>['sandboxes'] = [];
    for (const { state, version } of this.states.values()) {
      if (!state || state.removed) continue;
      const r = toRows(state, version);
      sessions.push(r.session);
      sandboxes.push(...r.sandboxes);
    }
    return { sessions, sandboxes };
  }
}
