import { sandboxFetch } from '../../lib/sandbox-dial.js';
import { randomUUID } from 'node:crypto';
import { DomainError, isDomainError } from '../../domain/errors.js';
import { currentSandbox, liveSandbox, type Session } from '../../domain/session/index.js';
import { projectQueries } from '../../sql/queries/projects.js';
import { sessionQueries } from '../../sql/queries/sessions.js';
import { costQueries } from '../../sql/queries/cost.js';
import type { ProjectRecord } from '../../domain/project.js';
import { SandboxError, type SandboxHandle } from '../../infra/sandbox/port.js';
import { failpoint } from '../../lib/failpoints.js';
import { UNISOLATED_PROVIDERS } from '../../domain/sandbox.js';
import { accountQueries } from '../../sql/queries/accounts.js';
import { cutSessionBranch } from './branch-cut.js';
import { mintSandboxCredentials, revokeSandboxCredentials, revokeSessionCredentials, type SandboxCredentials } from './credentials.js';
import { agentEnv } from './agent-env.js';
import { awaitAgentReady } from './agent-readiness.js';
import { keepFailureLog, redactLog } from './failure-log.js';
import { pause, probeSignal, StopInterrupted, type SessionDeps } from './deps.js';
import { handleSessionCommand, loadSession } from './handle.js';
import { type StopJob } from './jobs.js';
import { NO_SECRETS, repoUrlOf, sandboxEnv } from './sandbox-env.js';
import { checkpointEnv } from './saved-state.js';
import { sandboxSettings } from './sandbox-settings.js';
import { stopSession } from './service.js';
import { INSTALL_LABEL, installIdOf } from './orphans.js';
import { handOver, takeClaimed } from './pool-handover.js';
import { nowOf } from '../../lib/clock.js';
import { withAdvisoryLock } from '../../infra/db/advisory-lock.js';

/**
 * `session.provision`, resumable after a crash at any step: each step is recorded in the
 * session stream before the next starts, and a retry folds the stream and continues from
 * there. One worker at a time per session (a session-level advisory lock, which a
 * crashed process's connection releases).
 *
 *   branch cut → credentials + sandbox requested → provider started (active)
 *   → daemon healthy on the session branch → running; any failure → failed (sandbox gone).
 *
 * When this process stops, the waits end at once (`interrupted`): the session stays as it
 * is and its sandbox keeps running, and the next start's recovery re-enqueues the job.
 */
export async function provisionSession(deps: SessionDeps, sessionId: string): Promise<'running' | 'failed' | 'skipped' | 'interrupted'> {
  const r = await withAdvisoryLock(deps.db, `session:${sessionId}`, () => provisionLocked(deps, sessionId));
  return r.locked ? r.value : 'skipped';
}

const sys = (deps: Pick<SessionDeps, 'now'>, s: Session) => ({ actor: s.created_by, now: nowOf(deps) });

async function provisionLocked(deps: SessionDeps, sessionId: string): Promise<'running' | 'failed' | 'skipped' | 'interrupted'> {
  const log = deps.logger.child({ session_id: sessionId });
  if (deps.stopping?.aborted) return 'interrupted'; // fetched while stopping: the next start's recovery runs it
  let { state } = await loadSession(deps.db, sessionId);
  if (!state || state.removed || state.status !== 'provisioning') return 'skipped';
  const provider = deps.provider;
  if (!provider) throw new Error('no sandbox provider in this process');
  const project = await deps.db.one<ProjectRecord>(projectQueries.byId(state.project_id));
  if (!project) return 'skipped';
  const deadline = performance.now() + deps.config.SVC_SESSION_PROVISION_TIMEOUT_SECONDS * 1000;
  const started = performance.now();
  let handle: SandboxHandle | null = null;
  let secretValues: string[] = [];
  try {
    if (!state.base_commit_sha) {
      const sha = await cutSessionBranch(
        { repos: deps.repos, secrets: deps.secrets, logger: deps.logger, githubApiUrl: deps.config.SVC_GITHUB_API_URL },
        project,
        state.branch,
        state.base_ref,
      ).catch((err: Error) => {
        throw new BranchCutFailed(`The session branch could not be cut from '${state!.base_ref}': ${err.message}`);
      });
      state = (await handleSessionCommand(deps.db, sessionId, (s) => ({ type: 'RecordBranchCut', data: { base_commit_sha: sha }, meta: sys(deps, s!) }))).session;
      log.debug({ ms: performance.now() - started }, 'branch cut');
      failpoint('session.after-branch-cut');
    }
    let sb = liveSandbox(state);
    if (sb?.state === 'active') {
      // Started by another provider before a switch: its own provider tears it down, and a new one starts here.
      const own = sb.provider === provider.name ? provider : deps.providers?.get(sb.provider);
      const h = { sandboxId: sb.sandbox_id, provider: (own ?? provider).name, url: sb.url ?? '', ref: sb.ref ?? '' };
      if (own === provider && (await provider.inspect(h)) === 'running') handle = h;
      else {
        // Started before a crash and gone since (or on another provider): start another.
        if (own) await own.destroy(h);
        await revokeSandboxCredentials(deps.db, h.sandboxId);
        state = (await handleSessionCommand(deps.db, sessionId, (s) => ({ type: 'RecordSandboxStopped', data: { sandbox_id: h.sandboxId }, meta: sys(deps, s!) }))).session;
        sb = null;
      }
    }
    if (!handle) {
      if (sb) await (deps.providers?.get(sb.provider) ?? provider).destroy({ sandboxId: sb.sandbox_id, provider: sb.provider as SandboxHandle['provider'], url: '', ref: sb.ref ?? '' });
      // Claimed from the pool at create (pool.ts): that sandbox, handed over below; else a cold start.
      const pooled = await takeClaimed(deps, sessionId);
      const sandboxId = pooled?.sandbox_id ?? randomUUID();
      let creds: SandboxCredentials | undefined;
      state = (
        await handleSessionCommand(
          deps.db,
          sessionId,
          (s) => ({ type: 'RequestSandbox', data: { sandbox_id: sandboxId, provider: provider.name }, meta: sys(deps, s!) }),
          {
            inTx: async (tx, s) => {
              await revokeSessionCredentials(tx, sessionId); // an interrupted attempt's keys
              creds = await mintSandboxCredentials(tx, deps.secrets, { sandboxId, sessionId, projectId: s.project_id, userId: s.created_by });
            },
          },
        )
      ).session;
      const secrets = deps.projectSecrets ? await deps.projectSecrets(project.project_id) : NO_SECRETS;
      const env = sandboxEnv({
        session: state,
        project,
        repoUrl: repoUrlOf(deps, project),
        apiUrl: deps.apiUrl(),
        dashboardUrl: deps.dashboardUrl?.(),
        serviceKey: creds!.serviceKey,
        cliToken: creds!.cliToken,
        secrets,
        withPrompt: state.sandboxes.filter((x) => x.state !== 'error').length === 1,
        agent: { ...(await agentEnv(deps, { session: state, project, apiUrl: deps.apiUrl(), llmKey: creds!.llmKey })), ...checkpointEnv(deps.config) },
      });
      secretValues = [...Object.values(secrets.env), creds!.serviceKey, creds!.cliToken, creds!.llmKey];
      await refuseUnisolated(deps, provider.name);
      const settings = await sandboxSettings(deps, provider.name, project, state.base_commit_sha!);
      handle = pooled
        ? await handOver(deps, pooled, { session: state, env, serviceKey: creds!.serviceKey, llmKey: creds!.llmKey })
        : await provider.create({
            sandboxId,
            sessionId,
            projectId: project.project_id,
            accountId: project.account_id,
            env,
            ...settings,
            labels: { 'svc.session': sessionId, 'svc.project': project.project_id, 'svc.sandbox': sandboxId, [INSTALL_LABEL]: await installIdOf(deps.db) },
          });
      const h = handle;
      state = (await handleSessionCommand(deps.db, sessionId, (s) => ({ type: 'RecordSandboxActive', data: { sandbox_id: sandboxId, url: h.url, ref: h.ref }, meta: sys(deps, s!) }))).session;
      log.debug({ ms: performance.now() - started }, 'sandbox started');
      failpoint('session.after-sandbox-start');
    }
    await waitHealthy(deps, handle, state.branch, deadline);
    const h = handle;
    await handleSessionCommand(deps.db, sessionId, (s) => ({ type: 'MarkRunning', data: { sandbox_id: h.sandboxId }, meta: sys(deps, s!) }));
    log.info({ ms: performance.now() - started }, 'session running');
    const agent = await awaitAgentReady(deps, sessionId, h, deadline);
    log.info({ ms: performance.now() - started, agent }, 'agent runtime');
    return 'running';
  } catch (err) {
    if (err instanceof StopInterrupted) {
      // Not a failure: the sandbox runs on (detached), and a restarted server resumes from the stream.
      log.info({ ms: performance.now() - started }, 'provisioning interrupted: this process is stopping');
      return 'interrupted';
    }
    // Read before destroy: the process and bwrap providers delete the sandbox's directory.
    const tail = handle ? await keepFailureLog(deps, { sessionId, sandboxId: handle.sandboxId, provider: provider.name, secretValues }) : '';
    const now = await loadSession(deps.db, sessionId);
    const stillOurs = now.state && !now.state.removed && now.state.status === 'provisioning' && (!handle || currentSandbox(now.state)?.sandbox_id === handle.sandboxId);
    if (handle) await provider.destroy(handle).catch(() => {});
    if (!stillOurs) {
      // Stopped, restarted or removed meanwhile: whoever did that owns the session now.
      log.info({ err: (err as Error).message }, 'provisioning abandoned');
      return 'skipped';
    }
    const code = failureCodeOf(err);
    // A provider's message may quote the sandbox's output: redacted too (it goes into the event).
    const message = redactLog((err as Error).message, secretValues) + (tail ? " (the sandbox's last output: svc sessions info)" : '');
    log.warn({ err: (err as Error).message, code }, 'provisioning failed');
    await handleSessionCommand(deps.db, sessionId, (s) => ({ type: 'FailSession', data: { error: { code, message } }, meta: sys(deps, s!) }), {
      inTx: (tx) => revokeSessionCredentials(tx, sessionId).then(() => undefined),
    });
    return 'failed';
  }
}

/**
 * The process provider isolates nothing (one network and filesystem with the server and
 * every other sandbox): once a second account exists, it is refused unless the operator
 * said SVC_ALLOW_UNISOLATED=1.
 */
export async function refuseUnisolated(deps: Pick<SessionDeps, 'db' | 'config'>, providerName: string): Promise<void> {
  if (!UNISOLATED_PROVIDERS.includes(providerName as never) || deps.config.SVC_ALLOW_UNISOLATED) return;
  const row = await deps.db.one<{ n: number }>(accountQueries.countUpToTwo());
  if ((row?.n ?? 0) < 2) return;
  throw new SandboxError(
    'unavailable',
    'The process sandbox provider isolates nothing and this server has more than one account: choose SVC_SANDBOX_PROVIDER=bwrap (or docker, kubernetes), or set SVC_ALLOW_UNISOLATED=1 to accept the risk.',
  );
}

class TimeoutError extends Error {
  readonly code = 'timeout';
}

/** `running` = the daemon answers and the workspace is on the session branch. */
async function waitHealthy(deps: SessionDeps, h: SandboxHandle, branch: string, deadline: number): Promise<void> {
  let lastInspect = -Infinity;
  let last: unknown;
  for (;;) {
    if (deps.stopping?.aborted) throw new StopInterrupted();
    if (performance.now() > deadline) throw new TimeoutError(`The sandbox did not become healthy in time (last health: ${JSON.stringify(last ?? null)}).`);
    const body = await sandboxFetch(h.url, '/svc/health', { signal: probeSignal(2000, deps.stopping) })
      .then((r) => (r.ok ? (r.json() as Promise<{ branch?: string; commit?: string }>) : null))
      .catch(() => null);
    if (body) last = body;
    if (body?.branch === branch && body.commit) return;
    if (performance.now() - lastInspect > 500) {
      lastInspect = performance.now();
      if ((await deps.provider!.inspect(h)) === 'exited') throw new SandboxError('create_failed', 'The sandbox exited while starting.');
    }
    await pause(20, deps.stopping);
  }
}

/** What the provider reports of the sandbox's CPU time, kept for its session's cost; a stop never fails for it. */
async function recordCpu(deps: SessionDeps, sessionId: string, sandbox: SandboxHandle, read: (h: SandboxHandle) => Promise<number | null>): Promise<void> {
  const cpu = await read(sandbox).catch(() => null);
  if (cpu !== null) await deps.db.run(costQueries.recordCpu(sandbox.sandboxId, sessionId, cpu)).catch((err: Error) => deps.logger.warn({ sandbox_id: sandbox.sandboxId, err: err.message }, 'sandbox CPU time not recorded'));
}

/** `session.stop`: tears the sandbox down and records it. Idempotent. */
export async function stopSandbox(deps: SessionDeps, job: StopJob): Promise<void> {
  if (!deps.provider) throw new Error('no sandbox provider in this process');
  // The provider that made it, not the current one (a switch leaves the old ones to their own).
  const own = job.sandbox.provider === deps.provider.name ? deps.provider : deps.providers?.get(job.sandbox.provider);
  if (own?.cpuSeconds) await recordCpu(deps, job.session_id, job.sandbox, own.cpuSeconds.bind(own));
  if (own) await own.destroy(job.sandbox);
  else deps.logger.warn({ sandbox_id: job.sandbox.sandboxId, provider: job.sandbox.provider }, 'sandbox left as it is: its provider cannot run on this host');
  await revokeSandboxCredentials(deps.db, job.sandbox.sandboxId);
  await handleSessionCommand(deps.db, job.session_id, (s) =>
    s && !s.removed ? { type: 'RecordSandboxStopped', data: { sandbox_id: job.sandbox.sandboxId }, meta: sys(deps, s) } : null,
  ).catch((err) => {
    if (!(isDomainError(err) && err.code === 'not_found')) throw err;
  });
}

/**
 * `session.idle-sweep`: stops running sessions idle longer than their project's
 * `[sandbox] idle_timeout_minutes` (the manifest in force), else SVC_SESSION_IDLE_MINUTES.
 */
export async function sweepIdle(deps: SessionDeps): Promise<number> {
  const idle = await deps.db.rows<{ session_id: string; project_id: string }>(sessionQueries.idle(nowOf(deps), deps.config.SVC_SESSION_IDLE_MINUTES, 100));
  let n = 0;
  for (const s of idle) {
    const { state } = await loadSession(deps.db, s.session_id);
    if (!state) continue;
    const v = await stopSession(deps, s.project_id, s.session_id, state.created_by, 'idle').catch(() => null);
    if (v?.status === 'stopped') n++;
  }
  if (n) deps.logger.info({ stopped: n }, 'idle sessions stopped');
  return n;
}

/**
 * At worker start, and then on every sweep: provisioning sessions get their job again
 * (a crashed worker's job would otherwise wait out its expiry), and running sessions
 * whose sandbox is gone are marked stopped. Sandboxes that still run are re-attached:
 * nothing to do, the row already points at them.
 */
export async function recoverSessions(deps: SessionDeps, opts: { enqueue: (sessionId: string) => Promise<void> }): Promise<{ provisioning: number; attached: number; lost: number }> {
  const rows = await deps.db.rows<{ session_id: string; project_id: string; status: string }>(sessionQueries.unsettled());
  const out = { provisioning: 0, attached: 0, lost: 0 };
  for (const r of rows) {
    if (r.status === 'provisioning') {
      out.provisioning++;
      await opts.enqueue(r.session_id);
      continue;
    }
    const { state } = await loadSession(deps.db, r.session_id);
    const sb = state ? liveSandbox(state) : null;
    const h = sb ? { sandboxId: sb.sandbox_id, provider: sb.provider as SandboxHandle['provider'], url: sb.url ?? '', ref: sb.ref ?? '' } : null;
    if (h && deps.provider && h.provider === deps.provider.name && (await deps.provider.inspect(h)) === 'running') {
      out.attached++;
      // A worker that stopped while waiting for the agent left it `starting`: wait again.
      if (state!.agent_state === 'starting') void awaitAgentReady(deps, r.session_id, h, performance.now() + deps.config.SVC_SESSION_PROVISION_TIMEOUT_SECONDS * 1000).catch(() => {});
      continue;
    }
    // Another provider's (SVC_SANDBOX_PROVIDER changed): stopped, its sandbox destroyed by its
    // own provider (stopSandbox); one this host cannot run is not ours to judge.
    if (h && deps.provider && h.provider !== deps.provider.name && !deps.providers?.get(h.provider)) continue;
    out.lost++;
    await stopSession(deps, r.project_id, r.session_id, state!.created_by, 'lost').catch(() => {});
  }
  return out;
}

/** The session branch could not be cut: the session fails with `branch_failed`. */
class BranchCutFailed extends DomainError {
  constructor(message: string) {
    super('unavailable', 'Branch not cut', message);
  }
}

/** Why provisioning failed, as the session's `error.code` says it: the one mapping from errors to these codes. */
export type SessionFailureCode = 'branch_failed' | 'timeout' | 'sandbox_failed' | SandboxError['code'];

export function failureCodeOf(err: unknown): SessionFailureCode {
  if (err instanceof BranchCutFailed) return 'branch_failed';
  if (err instanceof SandboxError) return err.code;
  return (err as { code?: string }).code === 'timeout' ? 'timeout' : 'sandbox_failed';
}
