import type { Session as SessionState } from '../../domain/session/index.js';
import type { Session } from '../../contracts/sessions.js';
import { currentSandbox } from '../../domain/session/index.js';
import { agentPath } from '../../projections/sessions.js';

/** The Session JSON of contracts.md "Sessions": its one declaration is the contract's. */
export type SessionView = Session;

export type SessionUsage = NonNullable<Session['usage']>;

const iso = (v: unknown): string => new Date(v as string).toISOString();

/** `publicUrl`: the server's public base; the sandbox URL is this server's agent proxy. */
export function viewOfState(s: SessionState, publicUrl = ''): SessionView {
  const sb = currentSandbox(s);
  return {
    session_id: s.session_id,
    project_id: s.project_id,
    account_id: s.account_id,
    status: s.status,
    agent_state: s.agent_state,
    base_ref: s.base_ref,
    branch: s.branch,
    agent: s.agent,
    model: s.model,
    sandbox: sb
      ? { sandbox_id: sb.sandbox_id, state: sb.state, provider: sb.provider, url: sb.state === 'active' ? publicUrl + agentPath(s.project_id, s.session_id) : null }
      : null,
    error: s.error,
    created_by: s.created_by,
    created_at: s.created_at,
    updated_at: s.updated_at,
    last_activity_at: s.last_activity_at,
  };
}

export function viewOfRow(r: Record<string, unknown>, publicUrl = ''): SessionView {
  return {
    session_id: r.session_id as string,
    project_id: r.project_id as string,
    account_id: r.account_id as string,
    status: r.status as SessionView['status'],
    agent_state: (r.agent_state as SessionView['agent_state'] | undefined) ?? 'starting',
    base_ref: r.base_ref as string,
    branch: r.branch_name as string,
    agent: r.agent_name as string,
    model: (r.agent_model as string | null) ?? null,
    ...(typeof r.title === 'string' ? { title: r.title } : {}),
    sandbox: r.sb_id
      ? {
          sandbox_id: r.sb_id as string,
          state: r.sb_state as NonNullable<SessionView['sandbox']>['state'],
          provider: r.sb_provider as string,
          url: r.sandbox_url ? publicUrl + (r.sandbox_url as string) : null,
        }
      : null,
    error: (r.error as SessionView['error']) ?? null,
    created_by: r.created_by as string,
    created_at: iso(r.created_at),
    updated_at: iso(r.updated_at),
    last_activity_at: iso(r.last_activity_at),
  };
}
