import type { Db, Executor } from '../../infra/db/db.js';
import { readStream } from '../../infra/event-store.js';
import { handle } from '../../infra/event-sourcing/handler.js';
import { pgStore } from '../../infra/event-sourcing/pg-store.js';
import {
  fold,
  parseSessionEvent,
  sessionDecider,
  sessionStreamId,
  type Session,
  type SessionCommand,
  type SessionState,
} from '../../domain/session/index.js';
import { notFound } from '../../domain/errors.js';
import { sessionProjection, sessionStream } from '../../projections/sessions.js';

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
 * A session command through the one write path (infra/event-sourcing): the stream folded,
 * decided, appended and projected in one transaction; retried on a concurrent append.
 * Session streams are short, so folding them is cheaper than keeping a second copy of the
 * state. `before` runs in the transaction before the decision, `inTx` after the append
 * (also when nothing was appended).
 */
export async function handleSessionCommand(
  db: Db,
  sessionId: string,
  command: (s: SessionState) => SessionCommand | null,
  opts: { attempts?: number; before?: (tx: Executor, s: SessionState) => Promise<void>; inTx?: (tx: Executor, s: Session, appended: string[]) => Promise<void> } = {},
): Promise<SessionHandled> {
  const { inTx, before } = opts;
  const r = await handle(sessionStream(sessionId), sessionDecider, sessionProjection, {
    store: pgStore(db),
    load: 'stream',
    attempts: opts.attempts ?? 5,
    missing: () => notFound('Session'),
    command,
    ...(before ? { before } : {}),
    ...(inTx ? { inTx: (tx: Executor, s: SessionState, events: { type: string }[]) => inTx(tx, s!, events.map((e) => e.type)) } : {}),
  });
  return { session: r.state!, appended: r.events.map((e) => e.type) };
}
