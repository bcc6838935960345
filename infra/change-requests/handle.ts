import type pg from 'pg';
import type { Db, Executor } from '../db/db.js';
import { executor } from '../db/db.js';
import { createGroupCommit, type GroupCommit } from '../db/group-commit.js';
import { randomUUID } from 'node:crypto';
import { append, ConcurrencyError, streamVersion, type StoredEvent } from '../event-store.js';
import {
  decide,
  fold,
  STREAM_TYPE,
  streamIdOf,
  type ChangeRequest,
  type ChangeRequestCommand,
  type ChangeRequestEvent,
} from '../../domain/change-request/index.js';
import { notFound } from '../../domain/errors.js';
import { crQueries, type ProjectedAppend } from '../../sql/queries/change-requests.js';
import { fromRow, projectChangeRequest, toRow, type CrRow } from './projection.js';

export interface Handled {
  cr: ChangeRequest;
  events: StoredEvent[];
}

/**
 * Load, decide, append and project. The CR's current state comes from its projected row,
 * which carries the stream version it reflects; the event is appended with that version
 * expected and the row rewritten atomically with it. A concurrent writer makes the
 * append fail; the whole step is retried on fresh state.
 *
 * Two round trips: the row is read outside any transaction (a stale read is a stale
 * expected version, which the append refuses), and the append plus the projection are one
 * statement, group-committed with the other commands running at the same moment on the
 * same pool (one statement and one commit for all of them, each with its own expected
 * version: one that lost its race is retried alone, the others are stored). With `inTx`,
 * whose work must commit with the event, or on a dedicated connection (a lock holder),
 * all of it runs in one explicit transaction / on that connection instead.
 */
type Decision =
  | { done: Handled }
  | { done?: undefined; state: ChangeRequest; version: number; events: ChangeRequestEvent[]; actor: string };

/** Reads the CR's row and decides on it: nothing to do, or the events to append at a version. */
async function decideOnRow(
  db: Executor,
  projectId: string,
  crId: string,
  command: (cr: ChangeRequest) => ChangeRequestCommand | null,
  grouped?: pg.Pool,
): Promise<Decision> {
  const row = grouped ? await groupReadFor(grouped).submit({ projectId, crId }) : await db.one<Record<string, unknown>>(crQueries.byId(projectId, crId));
  if (!row) throw notFound('Change request');
  const { stream_version, ...state } = fromRow(row);
  const cmd = command(state);
  const events = cmd ? decide(cmd, state) : [];
  if (!cmd || events.length === 0) return { done: { cr: state, events: [] } };
  return { state, version: stream_version, events, actor: cmd.meta.actor };
}

export async function handleCommand(
  db: Db,
  projectId: string,
  crId: string,
  command: (cr: ChangeRequest) => ChangeRequestCommand | null,
  opts: { attempts?: number; inTx?: (tx: Executor, cr: ChangeRequest) => Promise<void> } = {},
): Promise<Handled> {
  // Stream conflicts are retried on fresh state: the command is decided again, so a rule
  // that no longer holds (a close that raced a merge) is still a 409, and one that does
  // (an edit of the title) lands. Bounded, with full jitter so racing writers spread out.
  const attempts = opts.attempts ?? 50;
  if (!opts.inTx) {
    for (let i = 1; i <= attempts; i++) {
      // Group commit needs the pool; a lock holder's connection (or a Db without a pool) goes alone.
      const pool = db.dedicated || !db.pool ? undefined : db.pool;
      const d = await decideOnRow(db, projectId, crId, command, pool);
      if (d.done) return d.done;
      const [event] = d.events;
      if (d.events.length !== 1 || !event) break; // the decider emits at most one; if that changes, the transactional path serves
      const next = fold(d.events, d.state)!;
      const cmd: ProjectedAppend = {
        streamId: streamIdOf(crId),
        streamType: STREAM_TYPE,
        projectId,
        expected: d.version,
        eventId: randomUUID(),
        type: event.type,
        data: event.data,
        metadata: { actor: d.actor },
        row: toRow(next, d.version + 1),
      };
      const one = pool ? await groupCommitFor(pool).submit(cmd) : await appendProjectedOne(db, cmd);
      const stored = one ? [one] : [];
      if (stored.length === 1) return { cr: next, events: stored };
      if (i === attempts) throw new ConcurrencyError(streamIdOf(crId), d.version, await streamVersion(db, streamIdOf(crId)));
      await backoff(i);
    }
  }
  for (let i = 1; ; i++) {
    try {
      return await db.transaction(async (tx) => {
        const d = await decideOnRow(tx, projectId, crId, command);
        if (d.done) return d.done;
        const stored = await appendAndProject(tx, projectId, crId, d.version, d.state, d.events, d.actor);
        await opts.inTx?.(tx, stored.cr);
        return stored;
      });
    } catch (err) {
      if (err instanceof ConcurrencyError && i < attempts) {
        await backoff(i);
        continue;
      }
      throw err;
    }
  }
}

/** Full jitter: a random wait up to min(50 ms, 1 ms * 2^attempt). */
const backoff = (attempt: number) => new Promise((r) => setTimeout(r, Math.random() * Math.min(50, 2 ** attempt)));

export async function appendAndProject(
  tx: Executor,
  projectId: string,
  crId: string,
  version: number,
  state: ChangeRequest | null,
  events: ChangeRequestEvent[],
  actor: string,
): Promise<Handled> {
  const res = await append(tx, {
    streamId: streamIdOf(crId),
    streamType: STREAM_TYPE,
    projectId,
    expectedVersion: version,
    events,
    metadata: { actor },
  });
  const next = fold(events, state)!;
  await projectChangeRequest(tx, next, res.nextVersion);
  return { cr: next, events: res.events };
}

export type { CrRow };

export type { ProjectedAppend };

async function appendProjectedOne(db: Executor, cmd: ProjectedAppend): Promise<StoredEvent | null> {
  return (await db.rows<StoredEvent>(crQueries.appendOneAndProject(cmd)))[0] ?? null;
}

/**
 * Statements of one kind (grouped reads, grouped appends) in flight at once, each on its
 * own pool connection: enough to keep Postgres busy while a commit waits for its WAL
 * flush, few enough that batches form under load.
 */
export const GROUP_IN_FLIGHT = 4;

/** One group commit per pool: the commands of every request in this process share it. */
const groupCommits = new WeakMap<pg.Pool, GroupCommit<ProjectedAppend, StoredEvent | null>>();

function groupCommitFor(pool: pg.Pool): GroupCommit<ProjectedAppend, StoredEvent | null> {
  let gc = groupCommits.get(pool);
  if (!gc) {
    const ex = executor(pool);
    gc = createGroupCommit<ProjectedAppend, StoredEvent | null>({
      maxInFlight: GROUP_IN_FLIGHT,
      key: (c) => c.streamId,
      runOne: (c) => appendProjectedOne(ex, c),
      async runBatch(cmds) {
        const stored = await ex.rows<StoredEvent>(crQueries.appendManyAndProject(cmds));
        const byStream = new Map(stored.map((e) => [e.stream_id, e]));
        return cmds.map((c) => byStream.get(c.streamId) ?? null);
      },
    });
    groupCommits.set(pool, gc);
  }
  return gc;
}

type RowKey = { projectId: string; crId: string };
/** Reads of CR rows by concurrent commands on one pool, grouped into one statement the same way. */
const groupReads = new WeakMap<pg.Pool, GroupCommit<RowKey, Record<string, unknown> | undefined>>();

function groupReadFor(pool: pg.Pool): GroupCommit<RowKey, Record<string, unknown> | undefined> {
  let gr = groupReads.get(pool);
  if (!gr) {
    const ex = executor(pool);
    gr = createGroupCommit<RowKey, Record<string, unknown> | undefined>({
      maxInFlight: GROUP_IN_FLIGHT,
      key: (k) => `${k.projectId}/${k.crId}`,
      runOne: (k) => ex.one(crQueries.byId(k.projectId, k.crId)),
      async runBatch(keys) {
        const rows = await ex.rows<Record<string, unknown>>(crQueries.byIds(keys));
        const byId = new Map(rows.map((r) => [`${String(r.project_id)}/${String(r.cr_id)}`, r]));
        return keys.map((k) => byId.get(`${k.projectId}/${k.crId}`));
      },
    });
    groupReads.set(pool, gr);
  }
  return gr;
}

/** The group commit serving `db`'s pool (tests read its stats). */
export const crGroupCommit = (db: Db) => groupCommitFor(db.pool);
