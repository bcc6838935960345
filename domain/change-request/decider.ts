import type { ChangeRequestCommand } from './commands.js';
import { metadataOf } from './commands.js';
import { decide } from './decide.js';
import { fold } from './evolve.js';
import { parseChangeRequestEvent, type ChangeRequestEvent } from './events.js';
import type { CrState } from './state.js';

/** The CR aggregate's decider, for the command handler (infra/event-sourcing). */
export const changeRequestDecider = {
  decide,
  fold: (events: ChangeRequestEvent[], state: CrState) => fold(events, state),
  parse: parseChangeRequestEvent,
  initial: null as CrState,
  metadata: (c: ChangeRequestCommand) => metadataOf(c.meta),
};
