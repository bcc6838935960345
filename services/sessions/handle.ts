import type { Db, Executor } from '../../infra/db/db.js';
import { append, ConcurrencyError, readStream } from '../../infra/event-store.js';
import {
  decide,
  fold,
  parseSessionEvent,
  SESSION_STREAM_TYPE,
  sessionStreamId,
  type Session,
  type SessionCommand,
  type SessionState,
} from '../../domain/session/index.js';
import { notFound } from '../../domain/errors.js';
import { projectSession } from '../../projections/sessions.js';

export interface SessionHandled {
  session: Session;
  /** Types of the events appended (empty: nothing changed). */
  appended: string[];
}

/** The session's state folded from its stream (null: no such stream). */
export async function loadSession(db: Executor, sessionId: string): Promise<{ state: SessionState; version: number }> {
  const events = await readStream(db, sessionStreamId(sessionId));
  return { state: fold(events.map(parseSessionEvent)), version: events.length ? events[events.length - 1]!.stream_position : 0 };
}

/**
 * Load (fold the stream), decide, append and project, in one transaction; retried on a
 * concurrent append. Session streams are short, so folding them is cheaper than keeping
 * a second copy of the state. `inTx` runs in the same transaction after the append.
 */
export async function handleSessionCommand(
  db: Db,
  sessionId: string,
  command: (s: SessionState) => SessionCommand | null,
  opts: { attempts?: number; before?: (tx: Executor, s: SessionState) => Promise<void>; inTx?: (tx: Executor, s: Session, appended: string[]) => Promise<void> } = {},
): Promise<SessionHandled> {
  const attempts = opts.attempts ?? 5;
  for (let i = 1; ; i++) {
    try {
      return await db.transaction(async (tx) => {
        const { state, version } = await loadSession(tx, sessionId);
        await opts.before?.(tx, state);
        const cmd = command(state);
        const events = cmd ? decide(cmd, state) : [];
        if (!state && events.length === 0) throw notFound('Session');
        if (events.length === 0) {
          await opts.inTx?.(tx, state!, []);
          return { session: state!, appended: [] };
        }
        const projectId = state?.project_id ?? (events[0]!.type === 'SessionCreated' ? events[0]!.data.project_id : null);
        const res = await append(tx, {
          streamId: sessionStreamId(sessionId),
          streamType: SESSION_STREAM_TYPE,
          projectId,
          expectedVersion: version,
          events,
          metadata: { actor: cmd!.meta.actor },
        });
        const next = fold(events, state)!;
        await projectSession(tx, next, res.nextVersion);
        const appended = events.map((e) => e.type);
        await opts.inTx?.(tx, next, appended);
        return { session: next, appended };
      });
    } catch (err) {
      if (err instanceof ConcurrencyError && i < attempts) continue;
      throw err;
    }
  }
}
