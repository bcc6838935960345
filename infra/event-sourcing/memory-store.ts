import { randomUUID } from 'node:crypto';
import type { Executor } from '../db/db.js';
import type { StoredEvent } from '../event-store.js';
import { streamKey, type EventStore, type RowSource, type StreamRef, type Write } from './port.js';
import { systemClock } from '../../lib/clock.js';

/**
 * The event store in memory, behind the same port as PostgreSQL's: for unit tests of
 * services and deciders without a database. Appends are checked against the expected
 * version exactly as the statement checks them; a row-keeping projection's rows are kept
 * (as the projection's own `toRow` makes them), so `load: 'row'` works too. A projection's
 * statements (`project`) are SQL and are not run; `inTx` hooks get an executor that
 * refuses every query: what is tested here is the decision, the log and the rows.
 */
export class MemoryEventStore implements EventStore {
  private streams = new Map<string, StoredEvent[]>();
  private rowsBy = new Map<RowSource<any, any>, Map<string, unknown>>();
  private position = 0;
  readonly inTransaction: boolean = false;
  /** Appends made (tests count them). */
  appends = 0;

  constructor(private readonly now: () => Date = systemClock.now) {}

  async read(stream: StreamRef): Promise<StoredEvent[]> {
    return [...(this.streams.get(stream.id) ?? [])];
  }

  async row<R>(rows: RowSource<any, R>, stream: StreamRef): Promise<R | undefined> {
    return this.rowsBy.get(rows)?.get(streamKey(stream)) as R | undefined;
  }

  cached<R>(): R | undefined {
    return undefined;
  }

  async version(stream: StreamRef): Promise<number> {
    return this.streams.get(stream.id)?.length ?? 0;
  }

  async write<S>(w: Write<S>): Promise<StoredEvent[] | null> {
    const have = this.streams.get(w.stream.id) ?? [];
    if (have.length !== w.expected) return null;
    const recorded_at = this.now();
    const stored = w.events.map<StoredEvent>((e, k) => ({
      global_position: ++this.position,
      txid: String(this.position),
      stream_id: w.stream.id,
      stream_position: w.expected + k + 1,
      event_id: randomUUID(),
      type: e.type,
      data: structuredClone(e.data),
      metadata: w.metadata,
      project_id: w.stream.projectId,
      recorded_at,
    }));
    this.streams.set(w.stream.id, [...have, ...stored]);
    this.appends++;
    const rows = w.projection.rows;
    if (rows) {
      if (!this.rowsBy.has(rows)) this.rowsBy.set(rows, new Map());
      this.rowsBy.get(rows)!.set(streamKey(w.stream), rows.toRow(w.next, w.expected + stored.length));
    }
    return stored;
  }

  async writeMany<S>(ws: Write<S>[]): Promise<(StoredEvent[] | null)[]> {
    const out: (StoredEvent[] | null)[] = [];
    for (const w of ws) out.push(await this.write(w));
    return out;
  }

  /** All or nothing, like a transaction: the maps are restored if `fn` throws. */
  async transaction<T>(fn: (store: EventStore, tx: Executor) => Promise<T>): Promise<T> {
    const saved = { streams: new Map(this.streams), rows: new Map([...this.rowsBy].map(([k, v]) => [k, new Map(v)])), position: this.position };
    try {
      return await fn(this, refusing);
    } catch (err) {
      this.streams = saved.streams;
      this.rowsBy = saved.rows;
      this.position = saved.position;
      throw err;
    }
  }
}

const refuse = (): never => {
  throw new Error('the memory event store runs no SQL');
};
const refusing: Executor = { run: refuse, one: refuse, rows: refuse } as unknown as Executor;
