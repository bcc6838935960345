import { existsSync } from 'node:fs';
import { mkdir, readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import type { ProjectRecord } from '../../domain/project.js';
import type { SandboxHandle } from '../../infra/sandbox/port.js';
import { checkQueries } from '../../sql/queries/checks.js';
import { projectQueries } from '../../sql/queries/projects.js';
import { sandboxSecrets } from '../secrets/sandbox-env.js';
import { checksInForce } from './config.js';
import type { CheckRunJob, ChecksDeps } from './deps.js';
import { boundedMaskedLog, maskSecrets } from './log.js';
import { CHECKS_ACTOR, evaluateAutoMerge } from './schedule.js';
import { failpointAsync } from '../../lib/failpoints.js';
import { appendCheckEvents, readCrChecks, type CheckEvent } from './stream.js';
import { nowOf } from '../../lib/clock.js';

export const DEFAULT_LOG_MAX_BYTES = 1024 * 1024;
const OUT = '.svc-check.log';
const EXIT = '.svc-check.exit';

/**
 * The sandbox's command: the check's `run` (passed in SVC_CHECK_RUN, never spliced into a
 * command line) with its output and exit status left in the workspace for the server.
 */
const WRAPPER = `/bin/sh -c "$SVC_CHECK_RUN" >${OUT} 2>&1 </dev/null; echo $? >${EXIT}.tmp; mv ${EXIT}.tmp ${EXIT}`;

type Outcome = { kind: 'exit'; code: number } | { kind: 'timeout' } | { kind: 'cancelled' } | { kind: 'error'; reason: string };

/**
 * `check.run`: one check on one merge result, in a sandbox of the server's provider (the
 * project's egress policy; only the secrets the check names; no API token, no model key:
 * the sandbox's workspace is the merge result's tree, exported by the server, and its
 * command reaches nothing of the server). Started, then passed, failed (exit status, or
 * stopped at its timeout) or errored; a run cancelled meanwhile (a newer pair) is stopped
 * and records nothing more. The output is kept bounded with known secret values masked.
 */
export async function runCheck(deps: ChecksDeps, job: CheckRunJob): Promise<void> {
  const project = await deps.db.one<ProjectRecord>(projectQueries.byId(job.project_id));
  if (!project) return;
  // A merge queue run is leased before it starts, so the queue can tell it from one whose worker died.
  const before = (await readCrChecks(deps, job.cr_id)).checks.runs.find((r) => r.run_id === job.run_id);
  if (!before || before.status !== 'queued') return;
  const release = before.via === 'queue' && deps.leaseRun ? await deps.leaseRun(job.run_id) : undefined;
  if (release === null) return; // another worker has it
  try {
    await runLeased(deps, project, job);
  } finally {
    await release?.();
  }
}

async function runLeased(deps: ChecksDeps, project: ProjectRecord, job: CheckRunJob): Promise<void> {
  const { appended } = await appendCheckEvents(deps, project.project_id, job.cr_id, CHECKS_ACTOR, (s) => {
    const r = s.checks.runs.find((x) => x.run_id === job.run_id);
    return r?.status === 'queued' ? [{ type: 'CheckStarted', data: { run_id: r.run_id, started_at: now(deps) } }] : [];
  });
  if (appended.length === 0) return; // cancelled, or another worker has it
  const run = (await readCrChecks(deps, job.cr_id)).checks.runs.find((r) => r.run_id === job.run_id)!;
  if (run.via === 'queue') await failpointAsync('merge-queue.checks-running');
  const spec = (await checksInForce(deps.db, project.project_id)).checks.find((c) => c.name === run.name);
  const dir = path.join(deps.dataDir, 'checks', run.run_id);
  const ws = path.join(dir, 'ws');
  let handle: SandboxHandle | undefined;
  let outcome: Outcome;
  let secretValues: string[] = [];
  try {
    const secrets = await sandboxSecrets(deps.db, deps.box, project.project_id);
    secretValues = Object.values(secrets.env);
    if (!spec) outcome = { kind: 'error', reason: `check '${run.name}' is no longer in the manifest in force` };
    else if (!run.merge_sha) outcome = { kind: 'error', reason: 'no merge result to run on' };
    else if (!deps.provider) outcome = { kind: 'error', reason: 'no sandbox provider on this worker' };
    else {
      await mkdir(ws, { recursive: true });
      await deps.repos.for(project).exportTree(run.merge_sha, ws);
      // A result file committed in the tree is not a result.
      for (const f of [OUT, EXIT, `${EXIT}.tmp`]) await rm(path.join(ws, f), { recursive: true, force: true });
      const env: Record<string, string> = {
        ...Object.fromEntries(spec.secrets.filter((n) => n in secrets.env).map((n) => [n, secrets.env[n]!])),
        CI: 'true',
        SVC_CHECK_NAME: run.name,
        SVC_CHECK_RUN: spec.run,
        SVC_CHECK_SHA: run.merge_sha,
        SVC_CHECK_BASE_SHA: run.base_sha,
        SVC_CHECK_HEAD_SHA: run.head_sha,
      };
      handle = await deps.provider.create({
        sandboxId: run.run_id,
        sessionId: run.run_id,
        projectId: project.project_id,
        accountId: project.account_id,
        env,
        labels: { 'svc.check': run.name },
        app: { command: WRAPPER, workspaceDir: ws },
      });
      outcome = await waitForEnd(deps, job, handle, ws, spec.timeout_minutes * 60_000);
    }
  } catch (err) {
    outcome = { kind: 'error', reason: `the check could not run: ${(err instanceof Error ? err.message : String(err)).slice(0, 300)}` };
  }
  if (handle) await deps.provider?.destroy(handle).catch((err: Error) => deps.logger.warn({ run_id: run.run_id, err: err.message }, 'check sandbox not destroyed'));
  const log = await boundedMaskedLog(path.join(ws, OUT), deps.logMaxBytes ?? DEFAULT_LOG_MAX_BYTES, secretValues);
  await deps.db.run(checkQueries.saveLog({ runId: run.run_id, projectId: project.project_id, crId: job.cr_id, body: log.body, truncated: log.truncated }));
  await rm(dir, { recursive: true, force: true }).catch(() => undefined);
  // The server's own words, but an error message may quote anything: no secret value reaches the log of events.
  if (outcome.kind === 'error') outcome = { kind: 'error', reason: maskSecrets(outcome.reason, secretValues) };
  if (outcome.kind !== 'cancelled') {
    await appendCheckEvents(deps, project.project_id, job.cr_id, CHECKS_ACTOR, (s) => {
      const r = s.checks.runs.find((x) => x.run_id === job.run_id);
      return r?.status === 'running' ? [terminal(run.run_id, outcome, now(deps))] : [];
    });
  }
  deps.logger.info({ cr_id: job.cr_id, run_id: run.run_id, check: run.name, outcome: outcome.kind }, 'check finished');
  if (run.via === 'queue') {
    // The queue decides what its run's result means (a failure leaves the queue and goes to the agent there).
    const cr = (await readCrChecks(deps, job.cr_id)).cr;
    await deps.onQueueRunDone?.(project, cr.base_ref);
    return;
  }
  await evaluateAutoMerge(deps, project, job.cr_id);
  const failed = outcome.kind === 'timeout' || outcome.kind === 'error' || (outcome.kind === 'exit' && outcome.code !== 0);
  if (failed && deps.onFailed) await deps.onFailed(project, job.cr_id).catch((err: Error) => deps.logger.warn({ cr_id: job.cr_id, err: err.message }, 'after a failed check'));
}

function terminal(run_id: string, o: Outcome, at: string): CheckEvent {
  switch (o.kind) {
    case 'exit':
      return o.code === 0
        ? { type: 'CheckPassed', data: { run_id, finished_at: at } }
        : { type: 'CheckFailed', data: { run_id, finished_at: at, exit_code: o.code, reason: 'exit' } };
    case 'timeout':
      return { type: 'CheckFailed', data: { run_id, finished_at: at, exit_code: null, reason: 'timeout' } };
    default:
      return { type: 'CheckErrored', data: { run_id, finished_at: at, reason: o.kind === 'error' ? o.reason : 'cancelled' } };
  }
}

/** Until the command's exit status appears, the sandbox dies without one, the timeout, or a cancellation. */
async function waitForEnd(deps: ChecksDeps, job: CheckRunJob, handle: SandboxHandle, ws: string, timeoutMs: number): Promise<Outcome> {
  const deadline = performance.now() + timeoutMs;
  const poll = deps.pollMs ?? 200;
  let lastCancelCheck = -Infinity;
  let exitedSeen = 0;
  for (;;) {
    const code = await readExit(ws);
    if (code !== null) return { kind: 'exit', code };
    if (performance.now() > deadline) return { kind: 'timeout' };
    if (performance.now() - lastCancelCheck > 1000) {
      lastCancelCheck = performance.now();
      const r = (await readCrChecks(deps, job.cr_id)).checks.runs.find((x) => x.run_id === job.run_id);
      if (r?.status !== 'running') return { kind: 'cancelled' };
      if ((await deps.provider!.inspect(handle).catch(() => 'unknown')) === 'exited') {
        // Give the last write a moment to land before calling it lost.
        if (++exitedSeen > 2) return { kind: 'error', reason: 'the sandbox exited without the check finishing' };
      }
    }
    await new Promise((r) => setTimeout(r, poll));
  }
}

async function readExit(ws: string): Promise<number | null> {
  const file = path.join(ws, EXIT);
  if (!existsSync(file)) return null;
  const n = Number((await readFile(file, 'utf8').catch(() => '')).trim());
  return Number.isInteger(n) ? n : null;
}

const now = (deps: ChecksDeps) => nowOf(deps).toISOString();
