import { randomUUID } from 'node:crypto';
import PgBoss from 'pg-boss';
import type pg from 'pg';
import { jobClaimQueries as claims, workerLockKey } from '../sql/queries/job-claims.js';
import { advisoryLockQueries } from '../sql/queries/advisory-locks.js';
import type { Db, Executor } from './db/db.js';
import type { Logger } from '../lib/logger.js';
import { step } from '../lib/step-trace.js';
import { failpoint } from '../lib/failpoints.js';
import { jittered } from '../lib/backoff.js';

/**
 * Jobs on pg-boss, woken by LISTEN/NOTIFY instead of waiting out a polling interval:
 * `enqueue` sends the job and NOTIFYs `svc_jobs`; workers LISTEN and fetch at once (a slow
 * poll stays as a safety net). When a job ends, the worker NOTIFYs `svc_job_done` with the
 * job id, and `waitFor` (in any process) reads the job's output.
 */
export const JOBS_CHANNEL = 'svc_jobs';
export const DONE_CHANNEL = 'svc_job_done';

export type JobOutput = { ok: true; value: unknown } | { ok: false; error: SerializedError };

export interface SerializedError {
  code: string;
  reason: string;
  message: string;
  details: Record<string, unknown>;
}

/**
 * The queue port. Production runs it on pg-boss (`startQueue` below); tests that build a
 * service's deps without a server use the in-memory one (test/support/memory-queue.ts), so
 * every path goes through a queue: there is no "no queue" branch.
 */
export interface Queue {
  /** Throws when the queue's store is unreachable (`/readyz`). */
  ping(): Promise<void>;
  enqueue(name: string, data: object, opts?: EnqueueOptions): Promise<string>;
  /** Resolves with the job's output once it completes or fails for good. */
  waitFor(name: string, id: string, timeoutMs: number): Promise<JobOutput | null>;
  /**
   * Enqueues a job and returns its output, like `enqueue` then `waitFor`; when this process
   * works `name` and has a free slot, it claims that very job (the same durable job row
   * and `job_claims` row a fetched job has) and runs it here at once: no fetch, no NOTIFY
   * hop, and the answer is handed back as soon as the handler returns (its recording
   * follows). If this process dies meanwhile, the job is re-queued like any other.
   */
  run(name: string, data: object, timeoutMs: number, opts?: { retryLimit?: number; /** Handed to the handler when it runs here (never stored). */ local?: unknown }): Promise<JobOutput | null>;
  /** Runs `handler` for jobs of `name`, up to `concurrency` at once. */
  work(name: string, concurrency: number, handler: JobHandler): void;
  stop(): Promise<void>;
}

export interface EnqueueOptions {
  retryLimit?: number;
  /** At most one job with this key is accepted per `seconds` (a scheduled sweep that every worker sends); a refused send returns ''. */
  singleton?: { key: string; seconds: number };
}

/** The pg-boss queue: the port, and pg-boss itself for what only it does. */
export interface PgQueue extends Queue {
  boss: PgBoss;
  /** This process's worker identity (its claims in `job_claims`). */
  workerId: string;
}

const BOSS_SCHEMA = 'pgboss';

/** pg-boss runs a send or a fetch through this when it must join our transaction. */
interface BossDb {
  executeSql(text: string, values: unknown[]): Promise<{ rows: unknown[] }>;
}
const viaTx = (tx: Executor): BossDb => ({ executeSql: async (text, values) => ({ rows: await tx.rows({ text, values }) }) });

/** `job.local`: what `run` was given, when the job runs in the process that called it. */
export type JobHandler = (data: unknown, job: { id: string; retryCount: number; local?: unknown }) => Promise<JobOutput>;

interface ClaimedJob {
  id: string;
  data: unknown;
  retryCount: number;
  local?: unknown;
}

interface WorkerState {
  handler: JobHandler;
  concurrency: number;
  /** Jobs running (or being claimed) here now. */
  active: number;
  pump: () => void;
}

export async function startQueue(
  db: Db,
  logger: Logger,
  opts: { queues: string[]; schedule?: boolean; /** How often a worker looks for dead workers' jobs (ms). */ rescueMs?: number },
): Promise<PgQueue> {
  const boss = new PgBoss({
    connectionString: db.url,
    schema: BOSS_SCHEMA,
    application_name: 'svc-queue',
    max: 4,
    schedule: opts.schedule ?? false,
    supervise: true,
  });
  boss.on('error', (err: Error) => logger.error({ err: err.message }, 'queue error'));
  await boss.start();
  for (const name of opts.queues) {
    // Other processes may create queues at the same moment: losing that race is not an
    // error, and neither is the deadlock Postgres breaks when several starters create
    // several queues at once (the loser tries again).
    for (let attempt = 1; !(await boss.getQueue(name)); attempt++) {
      try {
        await boss.createQueue(name, { name, policy: 'standard', retryLimit: 3, retryDelay: 1, expireInSeconds: 300 });
      } catch (err) {
        if (await boss.getQueue(name)) break;
        if ((err as { code?: string }).code !== '40P01' || attempt >= 5) throw err;
        await new Promise((r) => setTimeout(r, 20 * attempt + jittered(25, 1)));
      }
    }
  }

  const waiters = new Map<string, () => void>();
  /**
   * Outputs of jobs this process ran, kept briefly for a waiter in this same process: it
   * gets the result without a NOTIFY hop and a read of the job row.
   */
  const localOutputs = new Map<string, JobOutput>();
  const loops = new Map<string, () => void>();
  const listener: pg.PoolClient = await db.connect();
  listener.on('notification', (msg) => {
    if (msg.channel === DONE_CHANNEL && msg.payload) waiters.get(msg.payload)?.();
    if (msg.channel === JOBS_CHANNEL && msg.payload) loops.get(msg.payload)?.();
  });
  listener.on('error', (err) => logger.warn({ err: err.message }, 'queue listener connection failed'));
  await listener.query(`LISTEN ${DONE_CHANNEL}`);
  await listener.query(`LISTEN ${JOBS_CHANNEL}`);
  // Held for the life of this process on the listener's connection: while it is held, this
  // process's job claims are live; once the process dies, Postgres releases it.
  const workerId = randomUUID();
  const hold = advisoryLockQueries.lock(workerLockKey(workerId));
  await listener.query(hold.text, hold.values);

  let stopped = false;
  const timers: NodeJS.Timeout[] = [];
  const running = new Set<Promise<void>>();
  const workers = new Map<string, WorkerState>();

  const notify = (channel: string, payload: string) =>
    db.run({ text: 'SELECT pg_notify($1, $2)', values: [channel, payload] });

  /**
   * Jobs claimed by a worker process that died (its lock is free) go back to the queue now,
   * as pg-boss retries, instead of staying active until they expire. The job handlers are
   * safe to re-run (a merge re-run records a published merge once).
   */
  let rescuing = false;
  const rescue = async () => {
    if (rescuing || stopped) return;
    rescuing = true;
    try {
      for (const { worker_id } of await db.rows<{ worker_id: string }>(claims.otherWorkers(workerId))) {
        const gone = await db.one<{ ok: boolean }>(advisoryLockQueries.isFree(workerLockKey(worker_id)));
        if (!gone?.ok) continue;
        const taken = await db.rows<{ job_id: string; queue: string }>(claims.takeOver(worker_id));
        for (const j of taken) {
          await boss.fail(j.queue, j.job_id, { message: `worker ${worker_id} died while running this job` });
          logger.warn({ job: j.job_id, queue: j.queue, dead_worker: worker_id }, 're-queued a job a dead worker held');
        }
        if (taken.length) await notify(JOBS_CHANNEL, taken[0]!.queue);
      }
    } catch (err) {
      logger.warn({ err: (err as Error).message }, 'could not check for dead workers');
    } finally {
      rescuing = false;
    }
  };
  let rescueTimer: NodeJS.Timeout | undefined;

  const readOutput = async (name: string, id: string): Promise<JobOutput | null> => {
    const job = await boss.getJobById<object>(name, id, { includeArchive: true });
    if (!job) return null;
    if (job.state === 'completed' || job.state === 'failed' || job.state === 'cancelled') {
      const out = job.output as JobOutput | { value?: unknown } | null;
      if (out && typeof out === 'object' && 'ok' in out) return out as JobOutput;
      return { ok: false, error: { code: 'unavailable', reason: 'Job failed', message: `Job ${id} ${job.state}.`, details: {} } };
    }
    return null;
  };

  const send = async (name: string, data: object, o: EnqueueOptions, via?: BossDb): Promise<string> => {
    const single = o.singleton ? { singletonKey: o.singleton.key, singletonSeconds: o.singleton.seconds } : {};
    const id = await boss.send(name, data, { retryLimit: o.retryLimit ?? 3, retryDelay: 1, ...single, ...(via ? { db: via } : {}) });
    if (!id) {
      if (o.singleton) return ''; // one already sent this period
      throw new Error(`queue ${name} refused the job`);
    }
    return id;
  };

  const enqueue = async (name: string, data: object, o: EnqueueOptions = {}): Promise<string> => {
    const id = await send(name, data, o);
    if (!id) return id;
    // This process works the queue: fetch at once instead of waiting for our own NOTIFY.
    loops.get(name)?.();
    await notify(JOBS_CHANNEL, name);
    return id;
  };

  const waitFor = async (name: string, id: string, timeoutMs: number): Promise<JobOutput | null> => {
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      let wake!: () => void;
      const woken = new Promise<void>((r) => (wake = r));
      waiters.set(id, wake);
      try {
        const local = localOutputs.get(id);
        if (local) {
          localOutputs.delete(id);
          return local;
        }
        const out = await readOutput(name, id);
        if (out) return out;
        const left = deadline - performance.now();
        if (left <= 0) return null;
        // The notification normally wakes us; the timer covers a missed one.
        await Promise.race([woken, new Promise((r) => setTimeout(r, Math.min(left, 1000)))]);
      } finally {
        waiters.delete(id);
      }
    }
  };

  const track = (p: Promise<void>) => {
    p.catch(() => {}); // every failure is logged where it happens; never an unhandled rejection
    running.add(p);
    void p.finally(() => running.delete(p));
  };

  /**
   * Runs a claimed job's handler. `output` settles as soon as the handler has answered
   * (undefined when it threw: the job is failed, and pg-boss retries it); `recorded` when
   * the outcome is stored, the claim released and the job's waiters notified. Until then
   * the claim keeps the job safe: if this process dies, another worker's rescue re-queues it.
   */
  const execute = (name: string, w: WorkerState, job: ClaimedJob): Promise<{ output: JobOutput | undefined; recorded: Promise<void> }> => {
    const finish = (p: Promise<void>) =>
      p
        .then(async () => {
          await db.run(claims.release(job.id, workerId)).catch(() => {});
          await notify(DONE_CHANNEL, job.id).catch(() => {});
        })
        .finally(() => {
          w.active--;
          w.pump();
        });
    return w.handler(job.data, { id: job.id, retryCount: job.retryCount, ...(job.local !== undefined ? { local: job.local } : {}) }).then(
      (out) => ({
        output: out,
        recorded: finish(
          (async () => {
            try {
              await boss.complete(name, job.id, out as object);
              step('job complete');
            } catch (err) {
              // The work is done; only its result is not recorded. The job stays active until it
              // expires, then pg-boss retries it: the retry finds the CR no longer open and records
              // that typed outcome (it never merges twice).
              logger.error({ err: (err as Error).message, queue: name, job: job.id }, 'could not record a job result');
            }
          })(),
        ),
      }),
      (err: unknown) => ({
        output: undefined,
        recorded: finish(
          (async () => {
            // Unexpected failures are retried by pg-boss; typed outcomes are results.
            logger.error({ err: (err as Error).message, queue: name, job: job.id }, 'job failed');
            await boss.fail(name, job.id, { message: (err as Error).message }).catch(() => {});
            // Its retry is due after the retry delay (1 s): look again then, not at the next poll.
            setTimeout(() => w.pump(), 1100).unref();
          })(),
        ),
      }),
    );
  };

  return {
    boss,
    workerId,
    async ping() {
      await boss.getQueue(opts.queues[0] ?? 'cr.merge');
    },
    enqueue,
    waitFor,
    async run(name, data, timeoutMs, o = {}) {
      const w = workers.get(name);
      // Not worked here, or every slot busy: the ordinary way, and wait for whichever worker runs it.
      if (!w || stopped || w.active >= w.concurrency) return waitFor(name, await enqueue(name, data, o), timeoutMs);
      const deadline = performance.now() + timeoutMs;
      w.active++; // the slot is taken before the job exists, so a fetch cannot overrun the limit
      let id: string | undefined;
      let job: ClaimedJob | undefined;
      try {
        // The job and its claim commit together: no other worker ever sees it waiting, and if
        // this process dies from here on, the rescue re-queues it. The commit does not wait
        // for its WAL flush (see claims.noFlushWait): the job's first durable effect does.
        const claimed = await db.transaction(async (tx) => {
          await tx.run(claims.noFlushWait());
          id = await send(name, data, o, viaTx(tx));
          return tx.one<{ id: string; retry_count: number }>(claims.claimById(BOSS_SCHEMA, name, id, workerId));
        });
        if (claimed) job = { id: claimed.id, data, retryCount: claimed.retry_count, local: o.local };
        step('enqueue + claim');
      } finally {
        if (!job) {
          w.active--;
          w.pump();
        }
      }
      if (!job) {
        await notify(JOBS_CHANNEL, name); // another worker's, then
        return waitFor(name, id!, Math.max(0, deadline - performance.now()));
      }
      failpoint('queue.run-here.after-claim'); // tests: die holding the claim, before the handler ran
      const p = execute(name, w, job);
      track(p.then((r) => r.recorded));
      const out = await p.then((r) => r.output);
      // Failed: pg-boss retries it (here or elsewhere); wait for that outcome as any caller would.
      return out ?? waitFor(name, job.id, Math.max(0, deadline - performance.now()));
    },
    work(name, concurrency, handler) {
      let fetching = false;
      let pending = false;
      const w: WorkerState = { handler, concurrency, active: 0, pump: () => void pump() };
      workers.set(name, w);
      // One fetch in flight per queue: notifications arrive in bursts, and concurrent
      // fetches would each take `concurrency` jobs, overrunning the limit.
      const pump = async (): Promise<void> => {
        if (stopped) return;
        if (fetching || w.active >= concurrency) {
          pending = true;
          return;
        }
        pending = false;
        fetching = true;
        // Fetched and claimed in one transaction: a worker that dies in between has taken
        // nothing (a job fetched but not yet claimed would stay active until it expired).
        const jobs = await db
          .transaction(async (tx) => {
            const got = await boss.fetch<object>(name, { batchSize: concurrency - w.active, includeMetadata: true, db: viaTx(tx) });
            if (got.length > 0) await tx.run(claims.claimMany(got.map((j) => j.id), name, workerId));
            return got;
          })
          .catch((err: Error) => {
            logger.warn({ err: err.message, queue: name }, 'fetch failed');
            return [];
          });
        fetching = false;
        for (const job of jobs) {
          w.active++;
          const p = (async () => {
            step('job fetch + claim');
            const { output, recorded } = await execute(name, w, { id: job.id, data: job.data, retryCount: job.retryCount });
            // A waiter in this process is woken directly with the output, before it is recorded.
            if (output && waiters.has(job.id)) {
              localOutputs.set(job.id, output);
              setTimeout(() => localOutputs.delete(job.id), 60_000).unref();
              waiters.get(job.id)?.();
            }
            await recorded;
          })();
          track(p);
        }
        if (jobs.length > 0 || pending) void pump();
      };
      loops.set(name, () => void pump());
      const timer = setInterval(() => void pump(), 2000);
      timer.unref();
      timers.push(timer);
      if (!rescueTimer) {
        rescueTimer = setInterval(() => void rescue(), opts.rescueMs ?? 2000);
        rescueTimer.unref();
        timers.push(rescueTimer);
        void rescue();
      }
      void pump();
    },
    async stop() {
      stopped = true;
      timers.forEach(clearInterval);
      await Promise.allSettled([...running]);
      await listener.query(`UNLISTEN *`).catch(() => {});
      // The worker lock goes with the process; a pooled connection must not keep it.
      await listener.query(advisoryLockQueries.unlockAll().text).catch(() => {});
      listener.release();
      await boss.stop({ graceful: true, wait: true, timeout: 5000 }).catch(() => {});
    },
  };
}
