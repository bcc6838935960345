import { DomainError, notFound, validationError } from '../errors.js';
import type { SessionCommand } from './commands.js';
import type { SessionEvent } from './events.js';
import { currentSandbox, liveSandbox, type Session, type SessionState } from './state.js';

const conflict = (message: string, details: Record<string, unknown> = {}) => new DomainError('conflict', 'Conflict', message, details);

/**
 * The session lifecycle as a function: given the state and a command, the events to
 * append, or a typed error. Pure. Commands the provisioning worker sends twice (after a
 * crash) answer no events when their effect is already recorded.
 */
export function decide(command: SessionCommand, state: SessionState): SessionEvent[] {
  const at = command.meta.now.toISOString();
  const actor = command.meta.actor;
  if (command.type === 'CreateSession') {
    if (state !== null) throw conflict('This session already exists.');
    const d = command.data;
    if (d.agent.trim() === '') throw validationError('agent must not be empty.', [{ path: 'agent', message: 'must not be empty' }]);
    return [{ type: 'SessionCreated', data: { ...d, created_by: actor, created_at: at } }];
  }
  const s = existing(state);
  switch (command.type) {
    case 'RecordBranchCut': {
      if (s.base_commit_sha !== null) return [];
      requireProvisioning(s, 'cut its branch');
      return [{ type: 'SessionBranchCut', data: { base_commit_sha: command.data.base_commit_sha, at } }];
    }
    case 'RequestSandbox': {
      requireProvisioning(s, 'request a sandbox');
      const cur = liveSandbox(s);
      if (cur?.state === 'active') throw conflict('The session already has an active sandbox.');
      const events: SessionEvent[] = [];
      // A sandbox requested before a crash and never seen active is given up.
      if (cur) events.push({ type: 'SandboxErrored', data: { sandbox_id: cur.sandbox_id, error: { code: 'interrupted', message: 'Provisioning was interrupted.', at }, at } });
      events.push({ type: 'SandboxRequested', data: { ...command.data, at } });
      return events;
    }
    case 'RecordSandboxActive': {
      const cur = currentSandbox(s);
      if (cur?.sandbox_id === command.data.sandbox_id && cur.state === 'active') return [];
      requireProvisioning(s, 'start a sandbox');
      if (!cur || cur.sandbox_id !== command.data.sandbox_id || cur.state !== 'provisioning') {
        throw conflict('That sandbox is no longer the session\'s current one.');
      }
      return [{ type: 'SandboxActive', data: { ...command.data, at } }];
    }
    case 'MarkRunning': {
      if (s.status === 'running') return [];
      requireProvisioning(s, 'become running');
      const cur = currentSandbox(s);
      if (!cur || cur.sandbox_id !== command.data.sandbox_id || cur.state !== 'active') {
        throw conflict('The session\'s current sandbox is not active.');
      }
      return [{ type: 'SessionRunning', data: { sandbox_id: cur.sandbox_id, at } }];
    }
    case 'FailSession': {
      if (s.status === 'failed') return [];
      requireProvisioning(s, 'fail');
      const error = { ...command.data.error, at };
      const cur = liveSandbox(s);
      return [
        ...(cur ? [{ type: 'SandboxErrored' as const, data: { sandbox_id: cur.sandbox_id, error, at } }] : []),
        { type: 'SessionFailed', data: { error, at } },
      ];
    }
    case 'StopSession': {
      if (s.status === 'stopped' || s.status === 'failed') return [];
      if (s.status !== 'running' && s.status !== 'provisioning') throw conflict(`The session is ${s.status}; it cannot be stopped.`, { status: s.status });
      if (command.data.reason === 'idle' && s.status !== 'running') return [];
      return [{ type: 'SessionStopped', data: { reason: command.data.reason, by: command.data.reason === 'user' ? actor : null, at } }];
    }
    case 'RecordSandboxStopped': {
      const sb = s.sandboxes.find((x) => x.sandbox_id === command.data.sandbox_id);
      if (!sb || (sb.state !== 'provisioning' && sb.state !== 'active')) return [];
      return [{ type: 'SandboxStopped', data: { sandbox_id: sb.sandbox_id, at } }];
    }
    case 'RecordEgressRefused': {
      // Only for the sandbox still live: a late report about an older one is history no one needs.
      if (liveSandbox(s)?.sandbox_id !== command.data.sandbox_id) return [];
      return [{ type: 'SessionEgressRefused', data: { ...command.data, at } }];
    }
    case 'RestartSession': {
      if (s.status === 'provisioning') throw conflict('The session is already provisioning.', { status: s.status });
      const cur = currentSandbox(s);
      return [
        ...(cur && cur.state !== 'archived' ? [{ type: 'SandboxArchived' as const, data: { sandbox_id: cur.sandbox_id, at } }] : []),
        { type: 'SessionRestarted', data: { by: actor, at } },
      ];
    }
    case 'RemoveSession':
      return [{ type: 'SessionRemoved', data: { by: actor, at } }];
    case 'RecordActivity': {
      if (s.status !== 'running') return [];
      if (command.meta.now.getTime() - Date.parse(s.last_activity_at) < command.data.min_interval_ms) return [];
      return [{ type: 'SessionActivity', data: { at } }];
    }
    case 'MarkAgentReady':
    case 'FailAgent': {
      // Only for the current, active sandbox of a running session, once: a late answer
      // about an older sandbox, or after a stop, changes nothing.
      const cur = currentSandbox(s);
      if (s.status !== 'running' || !cur || cur.sandbox_id !== command.data.sandbox_id || cur.state !== 'active') return [];
      if (command.type === 'MarkAgentReady') {
        return s.agent_state === 'ready' ? [] : [{ type: 'SessionAgentReady', data: { sandbox_id: cur.sandbox_id, at } }];
      }
      if (s.agent_state !== 'starting') return [];
      return [{ type: 'SessionAgentFailed', data: { sandbox_id: cur.sandbox_id, error: { ...command.data.error, at }, at } }];
    }
    case 'RecordPaused':
      return [{ type: 'SessionPaused', data: { ...command.data, at } }];
    case 'RecordResumed': {
      // Only the current sandbox restores, once: a late report from an older one is dropped, and
      // so is a second read by the same sandbox (its daemon's quick probe timed out after the
      // server had answered, and it asked again once its clone was done).
      const cur = currentSandbox(s);
      if (cur?.sandbox_id !== command.data.sandbox_id || cur.resumed) return [];
      return [{ type: 'SessionResumed', data: { ...command.data, at } }];
    }
    default: {
      const unhandled: never = command;
      throw new Error(`unhandled command ${(unhandled as { type: string }).type}`);
    }
  }
}

function existing(state: SessionState): Session {
  if (state === null || state.removed) throw notFound('Session');
  return state;
}

function requireProvisioning(s: Session, what: string): void {
  if (s.status !== 'provisioning') throw conflict(`The session is ${s.status}; it cannot ${what}.`, { status: s.status });
}
