import type { SandboxHandle } from '../../infra/sandbox/port.js';
import type { SessionDeps } from './deps.js';

export const SESSION_PROVISION = 'session.provision';
export const SESSION_STOP = 'session.stop';
export const SESSION_IDLE_SWEEP = 'session.idle-sweep';
export const SESSION_QUEUES = [SESSION_PROVISION, SESSION_STOP, SESSION_IDLE_SWEEP];

export interface StopJob {
  session_id: string;
  sandbox: SandboxHandle;
}

/** Hands work to the workers, or runs it in the background of this process without a queue. */
export async function dispatchProvision(deps: SessionDeps, sessionId: string): Promise<void> {
  if (deps.queue) {
    await deps.queue.enqueue(SESSION_PROVISION, { session_id: sessionId });
    return;
  }
  const { provisionSession } = await import('./provision.js');
  void provisionSession(deps, sessionId).catch((err: Error) => deps.logger.error({ err: err.message, session_id: sessionId }, 'provisioning failed'));
}

export async function dispatchStop(deps: SessionDeps, job: StopJob): Promise<void> {
  if (deps.queue) {
    await deps.queue.enqueue(SESSION_STOP, job);
    return;
  }
  const { stopSandbox } = await import('./provision.js');
  void stopSandbox(deps, job).catch((err: Error) => deps.logger.error({ err: err.message, session_id: job.session_id }, 'sandbox stop failed'));
}
