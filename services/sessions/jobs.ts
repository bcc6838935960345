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

/** Hands provisioning to the workers (workers/sessions.ts), in whichever process works the queue. */
export async function dispatchProvision(deps: SessionDeps, sessionId: string): Promise<void> {
  await deps.queue.enqueue(SESSION_PROVISION, { session_id: sessionId });
}

export async function dispatchStop(deps: SessionDeps, job: StopJob): Promise<void> {
  await deps.queue.enqueue(SESSION_STOP, job);
}
