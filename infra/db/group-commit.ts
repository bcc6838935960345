/**
 * Group commit: concurrent callers each submit one command; commands that arrive while a
 * batch is being written wait and go out together in the next one (one statement, one
 * commit, one WAL flush for all of them). Nothing waits on a timer: an idle batcher
 * writes a lone command at once, so latency at low load is one statement as before.
 *
 * - Commands with the same key (a stream) never share a batch, nor go out in two batches
 *   at once: the later one waits, so per-key order is submission order, and two batches
 *   in flight never lock the same rows (no deadlock between them).
 * - `runBatch` answers per command (its own optimistic check: a stored result or null).
 *   If the batch statement itself fails (a constraint one command broke), every command
 *   of it is retried alone with `runOne`, so one failure fails only its own caller.
 */
export interface GroupCommitOptions<I, O> {
  key(item: I): string;
  runBatch(items: I[]): Promise<O[]>;
  runOne(item: I): Promise<O>;
  /** Largest batch (default 64). */
  maxBatch?: number;
  /** Batches written at once, on separate connections (default 2). */
  maxInFlight?: number;
}

export interface GroupCommit<I, O> {
  submit(item: I): Promise<O>;
  /** Batches written so far and commands in them (for tests and metrics). */
  stats(): { batches: number; commands: number; fallbacks: number };
}

interface Pending<I, O> {
  item: I;
  key: string;
  resolve(o: O): void;
  reject(err: unknown): void;
}

export function createGroupCommit<I, O>(opts: GroupCommitOptions<I, O>): GroupCommit<I, O> {
  const maxBatch = opts.maxBatch ?? 64;
  const maxInFlight = opts.maxInFlight ?? 2;
  const queue: Pending<I, O>[] = [];
  let inFlight = 0;
  const busy = new Set<string>();
  const stats = { batches: 0, commands: 0, fallbacks: 0 };

  const take = (): Pending<I, O>[] => {
    const batch: Pending<I, O>[] = [];
    const keys = new Set<string>();
    for (let i = 0; i < queue.length && batch.length < maxBatch; ) {
      const p = queue[i]!;
      if (keys.has(p.key) || busy.has(p.key)) {
        i++; // same stream as one already in this or a running batch: a later batch
        continue;
      }
      keys.add(p.key);
      batch.push(p);
      queue.splice(i, 1);
    }
    return batch;
  };

  const write = async (batch: Pending<I, O>[]): Promise<void> => {
    stats.batches++;
    stats.commands += batch.length;
    try {
      const out = batch.length === 1 ? [await opts.runOne(batch[0]!.item)] : await opts.runBatch(batch.map((p) => p.item));
      batch.forEach((p, i) => p.resolve(out[i]!));
    } catch (err) {
      if (batch.length === 1) return batch[0]!.reject(err);
      // One command broke the statement: each alone, so only the guilty one fails.
      stats.fallbacks++;
      await Promise.all(batch.map((p) => opts.runOne(p.item).then(p.resolve, p.reject)));
    }
  };

  const pump = (): void => {
    while (inFlight < maxInFlight && queue.length > 0) {
      const batch = take();
      if (batch.length === 0) return;
      inFlight++;
      for (const p of batch) busy.add(p.key);
      void write(batch).finally(() => {
        for (const p of batch) busy.delete(p.key);
        inFlight--;
        pump();
      });
    }
  };

  return {
    submit(item) {
      return new Promise<O>((resolve, reject) => {
        queue.push({ item, key: opts.key(item), resolve, reject });
        pump();
      });
    },
    stats: () => ({ ...stats }),
  };
}
