import type { SessionCommand } from './commands.js';
import { decide } from './decide.js';
import { fold } from './evolve.js';
import { parseSessionEvent, type SessionEvent } from './events.js';
import type { SessionState } from './state.js';

/** The session aggregate's decider, for the command handler (infra/event-sourcing). */
export const sessionDecider = {
  decide,
  fold: (events: SessionEvent[], state: SessionState) => fold(events, state),
  parse: parseSessionEvent,
  initial: null as SessionState,
  metadata: (c: SessionCommand) => ({ actor: c.meta.actor }),
  /** A session's stream belongs to its project (a new one's: the project its creation names). */
  projectOf: (s: SessionState) => s?.project_id ?? null,
};
