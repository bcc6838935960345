import type { SandboxHandle } from '../../infra/sandbox/port.js';
import { sandboxFetch } from '../../lib/sandbox-dial.js';
import { pause, probeSignal, type SessionDeps } from './deps.js';
import { currentSandbox } from '../../domain/session/index.js';
import { handleSessionCommand, loadSession } from './handle.js';
import { nowOf } from '../../lib/clock.js';

/**
 * After `running` (the daemon answers, the workspace is on the session branch), the
 * agent runtime behind it still boots: the session's `agent_state` stays `starting`
 * until the daemon reports the runtime answering (`agent: "running"` on /svc/health),
 * then `ready`; past the provisioning deadline, `error` (the session stays running: its
 * workspace is there, a restart may bring the runtime up). When this process stops,
 * `interrupted` at once: the state stays `starting`, and a restarted server waits again
 * (recoverSessions).
 */
export async function awaitAgentReady(
  deps: Pick<SessionDeps, 'db' | 'logger' | 'stopping' | 'now'>,
  sessionId: string,
  h: SandboxHandle,
  deadline: number,
): Promise<'ready' | 'error' | 'gone' | 'interrupted'> {
  let last: string | undefined;
  let checked = performance.now();
  const sys = (s: { created_by: string }) => ({ actor: s.created_by, now: nowOf(deps) });
  for (;;) {
    if (deps.stopping?.aborted) return 'interrupted';
    const body = await sandboxFetch(h.url, '/svc/health', { signal: probeSignal(2000, deps.stopping) })
      .then((r) => (r.ok ? (r.json() as Promise<{ agent?: string }>) : null))
      .catch(() => null);
    if (body?.agent) last = body.agent;
    if (body?.agent === 'running') {
      const r = await handleSessionCommand(deps.db, sessionId, (s) => (s && !s.removed ? { type: 'MarkAgentReady', data: { sandbox_id: h.sandboxId }, meta: sys(s) } : null)).catch(() => null);
      return r?.session.agent_state === 'ready' ? 'ready' : 'gone';
    }
    if (performance.now() > deadline) {
      const message = `The agent runtime did not answer in time (last state: ${last ?? 'unknown'}); see the session's sandbox log, or restart the session.`;
      deps.logger.warn({ session_id: sessionId, last }, 'agent runtime not ready');
      await handleSessionCommand(deps.db, sessionId, (s) =>
        s && !s.removed ? { type: 'FailAgent', data: { sandbox_id: h.sandboxId, error: { code: 'agent_timeout', message } }, meta: sys(s) } : null,
      ).catch(() => null);
      return 'error';
    }
    if (performance.now() - checked > 1000) {
      // Stopped, restarted or removed meanwhile: nothing left to wait for.
      checked = performance.now();
      const { state } = await loadSession(deps.db, sessionId);
      if (!state || state.removed || state.status !== 'running' || currentSandbox(state)?.sandbox_id !== h.sandboxId) return 'gone';
    }
    await pause(100, deps.stopping);
  }
}
