import PgBoss from 'pg-boss';
import type pg from 'pg';
import type { Db } from './db/db.js';
import type { Logger } from './logger.js';

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

export interface Queue {
  boss: PgBoss;
  enqueue(name: string, data: object, opts?: { retryLimit?: number }): Promise<string>;
  /** Resolves with the job's output once it completes or fails for good. */
  waitFor(name: string, id: string, timeoutMs: number): Promise<JobOutput | null>;
  /** Runs `handler` for jobs of `name`, up to `concurrency` at once. */
  work(name: string, concurrency: number, handler: (data: unknown, job: { id: string; retryCount: number }) => Promise<JobOutput>): void;
  stop(): Promise<void>;
}

export async function startQueue(db: Db, logger: Logger, opts: { queues: string[]; schedule?: boolean }): Promise<Queue> {
  const boss = new PgBoss({
    connectionString: db.url,
    schema: 'pgboss',
    application_name: 'svc-queue',
    max: 4,
    schedule: opts.schedule ?? false,
    supervise: true,
  });
  boss.on('error', (err: Error) => logger.error({ err: err.message }, 'queue error'));
  await boss.start();
  for (const name of opts.queues) {
    if (!(await boss.getQueue(name))) await boss.createQueue(name, { name, policy: 'standard', retryLimit: 3, retryDelay: 1, expireInSeconds: 300 }).catch(() => {});
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

  let stopped = false;
  const timers: NodeJS.Timeout[] = [];
  const running = new Set<Promise<void>>();

  const notify = (channel: string, payload: string) =>
    db.run({ text: 'SELECT pg_notify($1, $2)', values: [channel, payload] });

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

  return {
    boss,
    async enqueue(name, data, o = {}) {
      const id = await boss.send(name, data, { retryLimit: o.retryLimit ?? 3, retryDelay: 1 });
      if (!id) throw new Error(`queue ${name} refused the job`);
      // This process works the queue: fetch at once instead of waiting for our own NOTIFY.
      loops.get(name)?.();
      await notify(JOBS_CHANNEL, name);
      return id;
    },
    async waitFor(name, id, timeoutMs) {
      const deadline = Date.now() + timeoutMs;
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
          const left = deadline - Date.now();
          if (left <= 0) return null;
          // The notification normally wakes us; the timer covers a missed one.
          await Promise.race([woken, new Promise((r) => setTimeout(r, Math.min(left, 1000)))]);
        } finally {
          waiters.delete(id);
        }
      }
    },
    work(name, concurrency, handler) {
      let active = 0;
      let fetching = false;
      let pending = false;
      // One fetch in flight per queue: notifications arrive in bursts, and concurrent
      // fetches would each take `concurrency` jobs, overrunning the limit.
      const pump = async (): Promise<void> => {
        if (stopped) return;
        if (fetching || active >= concurrency) {
          pending = true;
          return;
        }
        pending = false;
        fetching = true;
        const jobs = await boss.fetch<object>(name, { batchSize: concurrency - active }).catch((err: Error) => {
          logger.warn({ err: err.message, queue: name }, 'fetch failed');
          return [];
        });
        fetching = false;
        for (const job of jobs) {
          active++;
          const p = (async () => {
            let out: JobOutput;
            try {
              out = await handler(job.data, { id: job.id, retryCount: 0 });
            } catch (err) {
              // Unexpected failures are retried by pg-boss; typed outcomes are results.
              logger.error({ err: (err as Error).message, queue: name, job: job.id }, 'job failed');
              await boss.fail(name, job.id, { message: (err as Error).message }).catch(() => {});
              await notify(DONE_CHANNEL, job.id).catch(() => {});
              // Its retry is due after the retry delay (1 s): look again then, not at the next poll.
              setTimeout(() => void pump(), 1100).unref();
              return;
            }
            try {
              await boss.complete(name, job.id, out as object);
              // A waiter in this process is woken directly with the output.
              if (waiters.has(job.id)) {
                localOutputs.set(job.id, out);
                setTimeout(() => localOutputs.delete(job.id), 60_000).unref();
                waiters.get(job.id)?.();
              }
            } catch (err) {
              // The work is done and idempotent; the job expires and its retry finds it done.
              logger.error({ err: (err as Error).message, queue: name, job: job.id }, 'could not record a job result');
            }
            await notify(DONE_CHANNEL, job.id).catch(() => {});
          })().finally(() => {
            active--;
            running.delete(p);
            void pump();
          });
          p.catch(() => {}); // every failure is logged above; never an unhandled rejection
          running.add(p);
        }
        if (jobs.length > 0 || pending) void pump();
      };
      loops.set(name, () => void pump());
      const timer = setInterval(() => void pump(), 2000);
      timer.unref();
      timers.push(timer);
      void pump();
    },
    async stop() {
      stopped = true;
      timers.forEach(clearInterval);
      await Promise.allSettled([...running]);
      await listener.query(`UNLISTEN *`).catch(() => {});
      listener.release();
      await boss.stop({ graceful: true, wait: true, timeout: 5000 }).catch(() => {});
    },
  };
}
