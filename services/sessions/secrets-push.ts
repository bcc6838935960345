import type { SessionDeps } from './deps.js';
import { controlCall } from './service.js';
import { sessionQueries } from '../../sql/queries/sessions.js';

/**
 * A project's secrets changed: every running sandbox of the project gets the change
 * through its daemon's `POST /svc/env` (which restarts the agent runtime with it), so a
 * running session does not keep a stale or deleted value. Best effort and never in the
 * request's path: a sandbox that does not answer gets the new set at its next restart.
 * Values go only to the daemon, over the sandbox's own key; they are never logged.
 */
export async function pushSecretsToSandboxes(
  deps: SessionDeps,
  projectId: string,
  change: { set: string[]; unset: string[]; revision: number },
): Promise<number> {
  if (!deps.projectSecrets) return 0;
  const running = await deps.db.rows<{ session_id: string }>(sessionQueries.runningOfProject(projectId));
  if (running.length === 0) return 0;
  const current = await deps.projectSecrets(projectId);
  const set: Record<string, string> = {
    SVC_PROJECT_SECRET_NAMES: current.names.join(','),
    SVC_PROJECT_SECRETS_REVISION: String(current.revision),
  };
  for (const name of change.set) if (name in current.env) set[name] = current.env[name]!;
  const unset = change.unset.filter((n) => !(n in current.env));
  let pushed = 0;
  for (const { session_id } of running) {
    try {
      await controlCall(deps, projectId, session_id, '/svc/env', { set, unset });
      pushed++;
    } catch (err) {
      deps.logger.warn({ session_id, err: (err as Error).message }, 'secrets not pushed to a running sandbox');
    }
  }
  return pushed;
}
