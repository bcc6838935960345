import client from 'prom-client';
import type { Db } from '../infra/db/db.js';
import { heldLock, perPassLock, type LeaderLock } from '../infra/db/leader-lock.js';
import type { Logger } from '../lib/logger.js';
import { exponential, jittered } from '../lib/backoff.js';

/**
 * The one loop of every server-wide periodic job (one file per job beside this one): start
 * and stop, an interval with jitter, backoff after failures, leader election where only one
 * process may run the job, and metrics. A job is only its pass: the work is the services'.
 *
 * Passes never overlap: the next is armed when one ends, after `everyMs` ± `jitter` (so the
 * processes of a cluster drift apart instead of asking the database in step), or after a
 * failure `everyMs · 2^failures` (at most `backoffMaxMs`), back to `everyMs` after a pass
 * that succeeds. `tick()` runs a pass now (or joins the one in flight): tests, and callers
 * that know there is work.
 */
export interface PeriodicJob {
  /** What the job does, kebab-case: its metrics label and its logger's `job`. */
  name: string;
  everyMs: number;
  /** ± this fraction of `everyMs`, drawn anew for every wait. Default 0.1. */
  jitter?: number;
  /** The longest wait after failures. Default `everyMs` · 8, at least `everyMs`. */
  backoffMaxMs?: number;
  /** The first pass at start (default), or one interval after it. */
  runAtStart?: boolean;
  /**
   * Only one process at a time runs a pass: `perPass` takes the lock named `key` for each
   * pass; `held` keeps it while this process runs (for a job with state of its own, such as
   * delivery retries). Absent: every process runs it (the job is safe in several).
   */
  leader?: { key: string; mode: 'perPass' | 'held' };
  /** One pass. A throw counts as a failure (logged; the next pass backs off). */
  pass(): Promise<void>;
  /** Called once at stop before the pass in flight is awaited (to cut long passes short). */
  stopping?(): void;
}

export interface RunningJob {
  /** One pass now, or the one in flight; resolves when it ends (failures are logged, never thrown). */
  tick(): Promise<void>;
  /** No pass starts after this; resolves once the one in flight ended and the leader lock is given back. */
  stop(): Promise<void>;
}

/** The jobs' metrics, on a registry of their own (ops/wiring/http.ts serves it with the API's). */
export interface WorkerMetrics {
  registry: client.Registry;
  passes: client.Counter<'job' | 'outcome'>;
  duration: client.Histogram<'job'>;
  failuresInARow: client.Gauge<'job'>;
}

export function createWorkerMetrics(): WorkerMetrics {
  const registry = new client.Registry();
  return {
    registry,
    passes: new client.Counter({
      name: 'svc_worker_passes_total',
      help: 'Passes of the periodic jobs by outcome (ok, failed, follower: another process leads)',
      labelNames: ['job', 'outcome'],
      registers: [registry],
    }),
    duration: new client.Histogram({
      name: 'svc_worker_pass_duration_seconds',
      help: 'Duration of the periodic jobs\' passes',
      labelNames: ['job'],
      buckets: [0.001, 0.01, 0.05, 0.1, 0.5, 1, 5, 30, 120, 600],
      registers: [registry],
    }),
    failuresInARow: new client.Gauge({
      name: 'svc_worker_failures_in_a_row',
      help: 'Consecutive failed passes of each periodic job (0: its last pass succeeded)',
      labelNames: ['job'],
      registers: [registry],
    }),
  };
}

/** The wait after `failures` failures in a row (0: none). */
export function backoffMs(everyMs: number, failures: number, maxMs: number): number {
  return failures === 0 ? everyMs : exponential(everyMs, failures, Math.max(everyMs, maxMs));
}

export interface SupervisorContext {
  /** For leader election (jobs with `leader`). */
  db?: Db;
  logger: Logger;
  metrics?: WorkerMetrics | undefined;
}

export function supervise(job: PeriodicJob, ctx: SupervisorContext): RunningJob {
  const log = ctx.logger.child({ job: job.name });
  const jitter = job.jitter ?? 0.1;
  const backoffMax = job.backoffMaxMs ?? job.everyMs * 8;
  let lock: LeaderLock | undefined;
  if (job.leader) {
    if (!ctx.db) throw new Error(`job ${job.name}: leader election needs the database`);
    lock = job.leader.mode === 'held' ? heldLock(ctx.db, job.leader.key, { logger: log, applicationName: `svc-${job.name}` }) : perPassLock(ctx.db, job.leader.key);
  }
  let failures = 0;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> | undefined;
  let stopped = false;

  const once = async (): Promise<void> => {
    const end = ctx.metrics?.duration.startTimer({ job: job.name });
    let outcome: 'ok' | 'failed' | 'follower' = 'ok';
    try {
      if (lock) outcome = (await lock.run(() => job.pass())) ? 'ok' : 'follower';
      else await job.pass();
      failures = 0;
    } catch (err) {
      outcome = 'failed';
      failures++;
      log.warn({ err: (err as Error).message, failures }, 'pass failed');
    } finally {
      end?.();
      ctx.metrics?.passes.inc({ job: job.name, outcome });
      ctx.metrics?.failuresInARow.set({ job: job.name }, failures);
    }
  };

  const arm = (ms: number) => {
    if (stopped) return;
    timer = setTimeout(() => void tick(), ms);
    timer.unref();
  };

  const tick = (): Promise<void> => {
    if (stopped) return running ?? Promise.resolve();
    if (timer) clearTimeout(timer);
    timer = undefined;
    running ??= once().finally(() => {
      running = undefined;
      arm(jittered(backoffMs(job.everyMs, failures, backoffMax), jitter));
    });
    return running;
  };

  if (job.runAtStart === false) arm(jittered(job.everyMs, jitter));
  else void tick();

  return {
    tick,
    async stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      timer = undefined;
      job.stopping?.();
      await running;
      await lock?.release();
    },
  };
}
