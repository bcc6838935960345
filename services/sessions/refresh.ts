import { DomainError } from '../../domain/errors.js';
import { sandboxFetch } from '../../lib/sandbox-dial.js';
import type { SessionDeps } from './deps.js';
import { liveTarget } from './service.js';
import type { SessionView } from './view.js';

/**
 * Refresh (the route `POST .../sessions/:s/refresh` and the dashboard's button): the
 * daemon's `/svc/refresh` (re-pull the session branch, restart the runtime in place),
 * called with the sandbox's key, which never leaves the server. Resolves once the daemon
 * accepted it; 409 when the session is not running or the daemon says so.
 */
export async function refreshSession(deps: SessionDeps, projectId: string, sessionId: string): Promise<SessionView> {
  const t = await liveTarget(deps, projectId, sessionId);
  let status: number;
  try {
    const up = await sandboxFetch(t.url, '/svc/refresh', { method: 'POST', headers: { authorization: `Bearer ${t.key}`, 'content-type': 'application/json' }, body: '{}', signal: AbortSignal.timeout(30_000) });
    status = up.status;
    await up.arrayBuffer();
  } catch (err) {
    throw new DomainError('unavailable', 'Sandbox unavailable', `The sandbox did not answer: ${(err as Error).message}`);
  }
  if (status >= 400) throw new DomainError(status === 409 ? 'conflict' : 'unavailable', 'Refresh refused', `The sandbox answered ${status}.`);
  return t.session;
}
