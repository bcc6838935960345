import type { Db, Executor } from '../../infra/db/db.js';
import { executor } from '../../infra/db/db.js';
import { createGroupCommit, type GroupCommit } from '../../infra/db/group-commit.js';
import type { StoredEvent } from '../../infra/event-store.js';
import { crQueries, type CrAppendWithPatch } from '../../sql/queries/change-requests.js';
import type { CrRow } from '../../sql/queries/change-request-row.js';

/**
 * What the CR command path keeps between commands in one process, over one pool: the
 * group commit of appends, the grouped reads of rows, and the cache of rows. Made once by
 * the server's wiring (`createCrCommandPath`) and passed in (`CrDeps.commands`); a second
 * server process has its own (tests build one per `Db` they act as).
 */
export interface CrCommandPath {
  /** Appends with their row patches, group-committed (the command path's statement). */
  readonly appends: GroupCommit<CrAppendWithPatch, StoredEvent | null>;
  /** Reads of CR rows by concurrent commands, grouped into one statement the same way. */
  readonly reads: GroupCommit<RowKey, Record<string, unknown> | undefined>;
  /** The row this process last read or wrote per CR (`projectId/crId`). */
  readonly rows: RowCache;
}

export interface RowKey {
  projectId: string;
  crId: string;
}

/**
 * Statements of one kind (grouped reads, grouped appends) in flight at once, each on its
 * own pool connection: two, so one batch waiting on a row lock or a WAL flush does not
 * stop the next, and few enough that batches form under load (16 writers on 2 cores:
 * about 4.7 commands per statement at 2, 2.8 at 4, and 0.60x vs 0.50x of the INSERT
 * floor, median of 8 rounds each).
 */
export const GROUP_IN_FLIGHT = 2;

/** Rows kept by default; the oldest written goes first beyond it. */
const MAX_CACHED_ROWS = 10_000;

export function createCrCommandPath(db: Db, opts: { maxCachedRows?: number; inFlight?: number } = {}): CrCommandPath {
  const ex = executor(db.pool);
  const inFlight = opts.inFlight ?? GROUP_IN_FLIGHT;
  return {
    appends: createGroupCommit<CrAppendWithPatch, StoredEvent | null>({
      maxInFlight: inFlight,
      key: (c) => c.streamId,
      runOne: async (c) => (await appendAndPatch(ex, [c]))[0]!,
      runBatch: (cmds) => appendAndPatch(ex, cmds),
    }),
    reads: createGroupCommit<RowKey, Record<string, unknown> | undefined>({
      maxInFlight: inFlight,
      key: (k) => `${k.projectId}/${k.crId}`,
      runOne: (k) => ex.one(crQueries.byId(k.projectId, k.crId)),
      async runBatch(keys) {
        const rows = await ex.rows<Record<string, unknown>>(crQueries.byIds(keys));
        const byId = new Map(rows.map((r) => [`${String(r.project_id)}/${String(r.cr_id)}`, r]));
        return keys.map((k) => byId.get(`${k.projectId}/${k.crId}`));
      },
    }),
    rows: new RowCache(opts.maxCachedRows ?? MAX_CACHED_ROWS),
  };
}

/** The command path's statement: each append stored and its row patched, if still at its version (null: not). */
export async function appendAndPatch(db: Executor, appends: CrAppendWithPatch[]): Promise<(StoredEvent | null)[]> {
  const stored = await db.rows<StoredEvent>(crQueries.appendAndPatch(appends));
  const byStream = new Map(stored.map((e) => [e.stream_id, e]));
  return appends.map((c) => byStream.get(c.streamId) ?? null);
}

/** A bounded map of rows by CR, oldest written first out. */
export class RowCache {
  private readonly rows = new Map<string, CrRow>();
  constructor(private readonly max: number) {}

  get(key: string): CrRow | undefined {
    return this.rows.get(key);
  }

  /** Keeps `row` unless a newer version of it is cached already (a read that raced an append). */
  remember(key: string, row: CrRow): void {
    const had = this.rows.get(key);
    if (had && had.stream_version > row.stream_version) return;
    this.rows.delete(key);
    this.rows.set(key, row);
    if (this.rows.size > this.max) this.rows.delete(this.rows.keys().next().value!);
  }

  delete(key: string): void {
    this.rows.delete(key);
  }
}
