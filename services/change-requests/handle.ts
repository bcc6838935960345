import type { Db, Executor } from '../../infra/db/db.js';
import type { StoredEvent } from '../../infra/event-store.js';
import { handle } from '../../infra/event-sourcing/handler.js';
import { pgStore, pgStoreIn } from '../../infra/event-sourcing/pg-store.js';
import type { EventStore } from '../../infra/event-sourcing/port.js';
import { changeRequestDecider, type ChangeRequest, type ChangeRequestCommand, type OpenChangeRequest } from '../../domain/change-request/index.js';
import { notFound } from '../../domain/errors.js';
import { crProjection, crStream } from '../../projections/change-requests.js';
import type { CrCommandPath } from './command-path.js';

export interface Handled {
  cr: ChangeRequest;
  events: StoredEvent[];
}

/**
 * Where a command runs: `db` (the pool, or a lock holder's connection) and the process's
 * command path (`commands`: group commit, grouped reads, cached rows on the pool).
 */
export interface CommandContext {
  db: Db;
  commands: CrCommandPath;
  /** The event store to write through instead of PostgreSQL's over `db` (unit tests: MemoryEventStore). */
  store?: EventStore;
}

/**
 * A command on an existing CR, through the one write path (infra/event-sourcing): decided
 * on the CR's projected row (cached by the command path, or read), appended at the row's
 * version with the row's patch in one statement, group-committed. With `inTx` (work that
 * must commit with the event) all of it runs in one explicit transaction instead.
 */
export async function handleCommand(
  cx: CommandContext,
  projectId: string,
  crId: string,
  command: (cr: ChangeRequest) => ChangeRequestCommand | null,
  opts: { attempts?: number; inTx?: (tx: Executor, cr: ChangeRequest, events: StoredEvent[]) => Promise<void> } = {},
): Promise<Handled> {
  const { inTx } = opts;
  const r = await handle(crStream(projectId, crId), changeRequestDecider, crProjection, {
    store: cx.store ?? pgStore(cx.db, cx.commands),
    load: 'row',
    command: (s) => command(s!),
    missing: () => notFound('Change request'),
    ...(opts.attempts !== undefined ? { attempts: opts.attempts } : {}),
    ...(inTx ? { inTx: (tx: Executor, s: ChangeRequest | null, events: StoredEvent[]) => inTx(tx, s!, events) } : {}),
  });
  return { cr: r.state!, events: r.events };
}

/** Opens a CR inside the caller's transaction (where its number was allocated): the stream must not exist yet. */
export async function openInTx(tx: Executor, projectId: string, crId: string, command: OpenChangeRequest): Promise<Handled> {
  const r = await handle(crStream(projectId, crId), changeRequestDecider, crProjection, {
    store: pgStoreIn(tx),
    load: 'new',
    command: () => command,
    missing: () => notFound('Change request'),
  });
  return { cr: r.state!, events: r.events };
}

/**
 * A command on an existing CR inside the caller's transaction (which read the facts the
 * decision needs under a lock: the project's open CRs for a retarget), decided on its row.
 */
export async function commandInTx(
  tx: Executor,
  projectId: string,
  crId: string,
  command: (cr: ChangeRequest) => ChangeRequestCommand | null,
): Promise<Handled> {
  const r = await handle(crStream(projectId, crId), changeRequestDecider, crProjection, {
    store: pgStoreIn(tx),
    load: 'row',
    command: (s) => command(s!),
    missing: () => notFound('Change request'),
  });
  return { cr: r.state!, events: r.events };
}
