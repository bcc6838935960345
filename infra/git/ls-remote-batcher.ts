/**
 * Batches concurrent `ls-remote`s of one repository without ever serving a read that
 * started before its caller asked: a call already running may have listed the refs
 * before the caller's branch moved, so a caller never joins it. Callers that arrive
 * while a call runs wait for the next one, which starts as soon as the running one ends
 * and asks for the union of their branches. So at most one call runs and one waits, and
 * under load each call answers every request that arrived during the previous one.
 * A failure is every waiter's failure, as if each had run its own call.
 */
export class LsRemoteBatcher {
  private running: Promise<Map<string, string>> | null = null;
  private queued: { names: Set<string>; result: Promise<Map<string, string>> } | null = null;
  /** Calls started, for tests. */
  calls = 0;

  constructor(private readonly list: (names: string[]) => Promise<Map<string, string>>) {}

  read(names: readonly string[]): Promise<Map<string, string>> {
    // A queued call has not started yet: joining it is always fresh enough.
    if (this.queued) {
      for (const n of names) this.queued.names.add(n);
      return this.queued.result;
    }
    if (!this.running) return this.start([...names]);
    const batch = { names: new Set(names), result: undefined as unknown as Promise<Map<string, string>> };
    batch.result = this.running
      .then(
        () => undefined,
        () => undefined,
      )
      .then(() => {
        if (this.queued === batch) this.queued = null;
        return this.start([...batch.names]);
      });
    this.queued = batch;
    return batch.result;
  }

  private start(names: string[]): Promise<Map<string, string>> {
    this.calls++;
    const p = this.list(names);
    this.running = p;
    const done = () => {
      if (this.running === p) this.running = null;
    };
    p.then(done, done);
    return p;
  }
}
