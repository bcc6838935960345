/**
 * A session as the spec's `project_sessions` row describes it, plus its sandbox
 * incarnations (`session_sandboxes`). The session id is a uuid and also the branch name.
 */
export type SessionStatus = 'queued' | 'branching' | 'provisioning' | 'running' | 'stopped' | 'failed' | 'completed';
export type SandboxState = 'provisioning' | 'active' | 'stopped' | 'error' | 'archived';
export type StopReason = 'user' | 'idle' | 'lost';
/**
 * The agent runtime's readiness, apart from the session's status: `starting` until the
 * runtime behind a running sandbox answers, `ready` then, `error` when it never did (or
 * provisioning failed), `stopped` once the session is.
 */
export type AgentState = 'starting' | 'ready' | 'error' | 'stopped';

export interface SessionErrorInfo {
  code: string;
  message: string;
  at: string;
}

export interface Sandbox {
  sandbox_id: string;
  session_id: string;
  provider: string;
  state: SandboxState;
  /** The daemon's base URL as the server reaches it (never shown to API callers). */
  url: string | null;
  /** Provider identity: pid, container id, pod name. */
  ref: string | null;
  error: SessionErrorInfo | null;
  /** Its saved state was handed to it (`SessionResumed`): a sandbox resumes once. */
  resumed?: true;
  created_at: string;
  updated_at: string;
}

export interface Session {
  session_id: string;
  account_id: string;
  project_id: string;
  status: SessionStatus;
  agent_state: AgentState;
  base_ref: string;
  branch: string;
  agent: string;
  model: string | null;
  /** The first prompt (delivered by the first sandbox only). */
  prompt: string | null;
  trigger: string | null;
  base_commit_sha: string | null;
  error: SessionErrorInfo | null;
  created_by: string;
  created_at: string;
  updated_at: string;
  last_activity_at: string;
  /** Every incarnation, oldest first; the last one is current. */
  sandboxes: Sandbox[];
  removed: boolean;
}

export type SessionState = Session | null;

/** Live sessions count against the account's cap. */
export const LIVE_STATUSES: readonly SessionStatus[] = ['provisioning', 'running'];

export const currentSandbox = (s: Session): Sandbox | null => s.sandboxes[s.sandboxes.length - 1] ?? null;

/** The current sandbox while it still holds resources (requested or started). */
export function liveSandbox(s: Session): Sandbox | null {
  const sb = currentSandbox(s);
  return sb && (sb.state === 'provisioning' || sb.state === 'active') ? sb : null;
}
