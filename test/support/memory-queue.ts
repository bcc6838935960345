import { randomUUID } from 'node:crypto';
import type { EnqueueOptions, JobHandler, JobOutput, Queue } from '../../infra/queue.js';

/** A job as the in-memory queue holds it (what a spec asserts on). */
export interface MemoryJob {
  id: string;
  name: string;
  data: object;
  state: 'created' | 'active' | 'completed' | 'failed';
  retries: number;
  output?: JobOutput;
}

/**
 * The queue port (infra/queue.ts) in memory, for specs that build a service's deps without
 * a server: the services take the same path as in production (enqueue, a worker runs the
 * job, a waiter gets its output), only the store is an array. A job of a queue nobody
 * works stays `created` (as with pg-boss and no worker), which specs read from `jobs`.
 * A handler that throws is retried up to `retryLimit` (default 3), then the job fails.
 */
export class MemoryQueue implements Queue {
  readonly jobs: MemoryJob[] = [];
  private readonly workers = new Map<string, { handler: JobHandler; concurrency: number; active: number }>();
  private readonly waiters = new Map<string, Array<() => void>>();
  private readonly limits = new Map<string, number>();
  private readonly singletons = new Map<string, number>();
  private readonly running = new Set<Promise<void>>();
  /** What `run` handed over for the handler (never stored, as with pg-boss). */
  private readonly locals = new Map<string, unknown>();
  private stopped = false;

  async ping(): Promise<void> {
    if (this.stopped) throw new Error('queue stopped');
  }

  /** The data of jobs sent to `name`, in order. */
  sent(name: string): object[] {
    return this.jobs.filter((j) => j.name === name).map((j) => j.data);
  }

  async enqueue(name: string, data: object, opts: EnqueueOptions = {}): Promise<string> {
    return this.add(name, data, opts, undefined);
  }

  private add(name: string, data: object, opts: EnqueueOptions, local: unknown): string {
    if (this.stopped) throw new Error('queue stopped');
    if (opts.singleton) {
      const key = `${name}\0${opts.singleton.key}`;
      const until = this.singletons.get(key) ?? 0;
      if (Date.now() < until) return '';
      this.singletons.set(key, Date.now() + opts.singleton.seconds * 1000);
    }
    const job: MemoryJob = { id: randomUUID(), name, data, state: 'created', retries: 0 };
    this.jobs.push(job);
    this.limits.set(job.id, opts.retryLimit ?? 3);
    if (local !== undefined) this.locals.set(job.id, local);
    this.pump(name);
    return job.id;
  }

  async waitFor(_name: string, id: string, timeoutMs: number): Promise<JobOutput | null> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const job = this.jobs.find((j) => j.id === id);
      if (job?.output && (job.state === 'completed' || job.state === 'failed')) return job.output;
      const left = deadline - Date.now();
      if (left <= 0 || !job) return null;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, left);
        const list = this.waiters.get(id) ?? [];
        list.push(() => (clearTimeout(timer), resolve()));
        this.waiters.set(id, list);
      });
    }
  }

  async run(name: string, data: object, timeoutMs: number, opts: EnqueueOptions & { local?: unknown } = {}): Promise<JobOutput | null> {
    const { local, ...o } = opts;
    return this.waitFor(name, this.add(name, data, o, local), timeoutMs);
  }

  work(name: string, concurrency: number, handler: JobHandler): void {
    this.workers.set(name, { handler, concurrency, active: 0 });
    this.pump(name);
  }

  /** Waits for every job that is running now (and any retry it schedules) to settle. */
  async idle(): Promise<void> {
    while (this.running.size > 0) await Promise.allSettled([...this.running]);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.idle();
  }

  /** Starts waiting jobs of `name` on a free slot; on the next tick, as a fetch would (the caller gets its id first). */
  private pump(name: string): void {
    queueMicrotask(() => {
      const w = this.workers.get(name);
      if (!w || this.stopped) return;
      for (const job of this.jobs) {
        if (w.active >= w.concurrency) return;
        if (job.name !== name || job.state !== 'created') continue;
        job.state = 'active';
        w.active++;
        const p = this.execute(job, w).finally(() => {
          w.active--;
          this.running.delete(p);
          this.pump(name);
        });
        this.running.add(p);
      }
    });
  }

  private async execute(job: MemoryJob, w: { handler: JobHandler }): Promise<void> {
    const local = this.locals.get(job.id);
    try {
      job.output = await w.handler(job.data, { id: job.id, retryCount: job.retries, ...(local !== undefined ? { local } : {}) });
      job.state = 'completed';
    } catch (err) {
      if (job.retries < (this.limits.get(job.id) ?? 3)) {
        job.retries++;
        job.state = 'created'; // retried by the next pump (the finally above)
        return;
      }
      job.state = 'failed';
      job.output = { ok: false, error: { code: 'unavailable', reason: 'Job failed', message: (err as Error).message, details: {} } };
    }
    this.locals.delete(job.id);
    for (const wake of this.waiters.get(job.id) ?? []) wake();
    this.waiters.delete(job.id);
  }
}
