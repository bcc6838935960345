import { randomUUID } from 'node:crypto';
import { DomainError } from '../domain/errors.js';
import type { Executor } from './db/db.js';
import { pgCode } from './db/db.js';
import { eventQueries as q } from '../sql/queries/events.js';

/**
 * The event store over `events` + `streams`: optimistic appends, idempotent re-appends by
 * event id, stream reads (optionally as of a time), and a global read that never skips
 * an event committed late.
 */

export interface EventMetadata {
  actor: string;
  correlation_id?: string;
  /** Set when the actor acted through an agent: the session whose agent-grade credential was used. */
  session_id?: string;
  causation_id?: string;
}

export interface NewEvent {
  type: string;
  data: unknown;
  /** Supply it to make a retried append idempotent; generated otherwise. */
  event_id?: string;
}

export interface StoredEvent<T extends string = string, D = unknown> {
  global_position: number;
  /** The appending transaction's id (xid8, as text): with global_position, the feed's order. */
  txid: string;
  stream_id: string;
  stream_position: number;
  event_id: string;
  type: T;
  data: D;
  metadata: EventMetadata;
  project_id: string | null;
  recorded_at: Date;
}

export interface AppendRequest {
  streamId: string;
  streamType: string;
  projectId: string | null;
  /** The stream version the events were decided on; 0 when the stream must not exist yet. */
  expectedVersion: number;
  events: NewEvent[];
  metadata: EventMetadata;
}

export interface AppendResult {
  nextVersion: number;
  events: StoredEvent[];
}

/** Where a global reader stands: after this event (transaction id + global position). */
export interface Checkpoint {
  txid: string;
  position: number;
}

export const START: Checkpoint = { txid: '0', position: 0 };

export class ConcurrencyError extends DomainError {
  constructor(streamId: string, expected: number, actual: number | null) {
    super(
      'concurrency',
      'Conflict',
      `Stream ${streamId} changed concurrently (expected version ${expected}, found ${actual ?? 'none'}); retry.`,
      { stream_id: streamId, expected_version: expected, actual_version: actual },
    );
  }
}

/** Appends inside the caller's transaction, so projections commit with their events. */
export async function append(tx: Executor, req: AppendRequest): Promise<AppendResult> {
  if (req.events.length === 0) return { nextVersion: req.expectedVersion, events: [] };
  const eventIds = req.events.map((e) => e.event_id ?? randomUUID());
  let stored: StoredEvent[];
  try {
    stored = await tx.rows<StoredEvent>(
      q.append([
        {
          streamId: req.streamId,
          streamType: req.streamType,
          projectId: req.projectId,
          expected: req.expectedVersion,
          events: req.events.map((e, i) => ({ eventId: eventIds[i]!, type: e.type, data: e.data })),
          metadata: req.metadata,
        },
      ]),
    );
  } catch (err) {
    if (pgCode(err) === '23505') {
      throw new DomainError('concurrency', 'Conflict', 'An event with this id was already appended elsewhere.');
    }
    throw err;
  }
  if (stored.length === req.events.length) {
    return { nextVersion: req.expectedVersion + stored.length, events: stored };
  }
  // Not appended: either a retry of an append that already happened (same event ids, same
  // stream), which succeeds without writing twice, or a real concurrent change.
  const existing = await tx.rows<StoredEvent>(q.byEventIds(eventIds));
  if (existing.length === eventIds.length && existing.every((e) => e.stream_id === req.streamId)) {
    const last = existing[existing.length - 1]!;
    return { nextVersion: last.stream_position, events: existing };
  }
  const actual = await tx.one<{ version: number }>(q.streamVersion(req.streamId));
  throw new ConcurrencyError(req.streamId, req.expectedVersion, actual?.version ?? null);
}

export async function readStream(db: Executor, streamId: string, opts: { asOf?: Date } = {}): Promise<StoredEvent[]> {
  return db.rows<StoredEvent>(q.readStream(streamId, opts.asOf ?? null));
}

export async function streamVersion(db: Executor, streamId: string): Promise<number> {
  return (await db.one<{ version: number }>(q.streamVersion(streamId)))?.version ?? 0;
}

/** One page of the global log after `after`, in commit-safe order. */
export async function readAll(
  db: Executor,
  after: Checkpoint,
  opts: { limit?: number; projectId?: string } = {},
): Promise<StoredEvent[]> {
  return db.rows<StoredEvent>(q.readAll(after, opts.limit ?? 1000, opts.projectId ?? null));
}

/**
 * What the feed watcher compares between ticks: the last global position handed out
 * (committed or not) and the horizon of the commit-safe read.
 */
export async function latestPosition(db: Executor): Promise<{ position: number; horizon: string } | undefined> {
  return db.one<{ position: number; horizon: string }>(q.latestPosition());
}

export function checkpointAfter(e: Pick<StoredEvent, 'txid' | 'global_position'>): Checkpoint {
  return { txid: e.txid, position: e.global_position };
}

/** Resolves a public global position (as given to `?after=`) to a resumable checkpoint. */
export async function checkpointOf(db: Executor, globalPosition: number, projectId?: string): Promise<Checkpoint | null> {
  if (globalPosition <= 0) return START;
  const query = projectId === undefined ? q.checkpointOf(globalPosition) : q.checkpointOfInProject(globalPosition, projectId);
  return (await db.one<Checkpoint>(query)) ?? null;
}
