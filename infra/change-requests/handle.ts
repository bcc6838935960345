import type { Db, Executor } from '../db/db.js';
import { append, ConcurrencyError, type StoredEvent } from '../event-store.js';
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
import { crQueries } from '../../sql/queries/change-requests.js';
import { fromRow, projectChangeRequest, type CrRow } from '../../projections/change-requests.js';

export interface Handled {
  cr: ChangeRequest;
  events: StoredEvent[];
}

/**
 * Load, decide, append and project in one transaction: the CR's current state comes from
 * its projected row (which carries the stream version it reflects), the events are
 * appended with that version expected, and the row is rewritten in the same transaction.
 * A concurrent writer makes the append fail; the whole step is retried on fresh state.
 */
export async function handleCommand(
  db: Db,
  projectId: string,
  crId: string,
  command: (cr: ChangeRequest) => ChangeRequestCommand | null,
  opts: { attempts?: number; inTx?: (tx: Executor, cr: ChangeRequest) => Promise<void> } = {},
): Promise<Handled> {
  const attempts = opts.attempts ?? 5;
  for (let i = 1; ; i++) {
    try {
      return await db.transaction(async (tx) => {
        const row = await tx.one<Record<string, unknown>>(crQueries.byId(projectId, crId));
        if (!row) throw notFound('Change request');
        const { stream_version, ...state } = fromRow(row);
        const cmd = command(state);
        if (!cmd) return { cr: state, events: [] };
        const events = decide(cmd, state);
        if (events.length === 0) return { cr: state, events: [] };
        const stored = await appendAndProject(tx, state.project_id, state.cr_id, stream_version, state, events, cmd.meta.actor);
        await opts.inTx?.(tx, stored.cr);
        return stored;
      });
    } catch (err) {
      if (err instanceof ConcurrencyError && i < attempts) continue;
      throw err;
    }
  }
}

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
