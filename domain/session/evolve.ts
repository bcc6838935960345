import type { SessionEvent } from './events.js';
import type { Sandbox, SandboxState, Session, SessionState } from './state.js';

/** Folds one event into the state. Pure; total over the event union. */
export function evolve(state: SessionState, event: SessionEvent): SessionState {
  if (event.type === 'SessionCreated') {
    const d = event.data;
    return {
      ...d,
      status: 'provisioning',
      agent_state: 'starting',
      branch: d.session_id,
      base_commit_sha: null,
      error: null,
      updated_at: d.created_at,
      last_activity_at: d.created_at,
      sandboxes: [],
      removed: false,
    };
  }
  if (state === null) return null;
  const at = event.data.at;
  const touched = { ...state, updated_at: at };
  const sandbox = (id: string, change: Partial<Sandbox> & { state?: SandboxState }): Session => ({
    ...touched,
    sandboxes: state.sandboxes.map((sb) => (sb.sandbox_id === id ? { ...sb, ...change, updated_at: at } : sb)),
  });
  switch (event.type) {
    case 'SessionBranchCut':
      return { ...touched, base_commit_sha: event.data.base_commit_sha };
    case 'SandboxRequested':
      return {
        ...touched,
        sandboxes: [
          ...state.sandboxes,
          {
            sandbox_id: event.data.sandbox_id,
            session_id: state.session_id,
            provider: event.data.provider,
            state: 'provisioning',
            url: null,
            ref: null,
            error: null,
            created_at: at,
            updated_at: at,
          },
        ],
      };
    case 'SandboxActive':
      return sandbox(event.data.sandbox_id, { state: 'active', url: event.data.url, ref: event.data.ref });
    case 'SandboxStopped':
      return sandbox(event.data.sandbox_id, { state: 'stopped' });
    case 'SandboxErrored':
      return sandbox(event.data.sandbox_id, { state: 'error', error: event.data.error });
    case 'SandboxArchived':
      return sandbox(event.data.sandbox_id, { state: 'archived' });
    case 'SessionEgressRefused':
      return state; // history only: the session's row does not change
    case 'SessionRunning':
      return { ...touched, status: 'running', error: null, last_activity_at: at };
    case 'SessionStopped':
      return { ...touched, status: 'stopped', agent_state: 'stopped' };
    case 'SessionFailed':
      return { ...touched, status: 'failed', agent_state: 'error', error: event.data.error };
    case 'SessionRestarted':
      return { ...touched, status: 'provisioning', agent_state: 'starting', error: null, last_activity_at: at };
    case 'SessionAgentReady':
      return { ...touched, agent_state: 'ready' };
    case 'SessionAgentFailed':
      return { ...touched, agent_state: 'error', error: event.data.error };
    case 'SessionRemoved':
      return { ...touched, removed: true };
    case 'SessionActivity':
      return { ...touched, last_activity_at: at };
    // What was saved lives on the saved-state row; the events are history (and the row's updated_at).
    case 'SessionPaused':
      return touched;
    case 'SessionResumed':
      return sandbox(event.data.sandbox_id, { resumed: true });
    default: {
      const unhandled: never = event;
      throw new Error(`unhandled event ${(unhandled as { type: string }).type}`);
    }
  }
}

export const fold = (events: SessionEvent[], from: SessionState = null): SessionState => events.reduce(evolve, from);
