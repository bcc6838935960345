import { decide, type MergeQueueCommand } from './decide.js';
import { parseMergeQueueEvent, type MergeQueueEvent } from './events.js';
import { fold, type MergeQueueStateOrNull } from './state.js';

/** The merge queue aggregate's decider, for the command handler (infra/event-sourcing). */
export const mergeQueueDecider = {
  decide,
  fold: (events: MergeQueueEvent[], state: MergeQueueStateOrNull) => fold(events, state),
  parse: parseMergeQueueEvent,
  initial: null as MergeQueueStateOrNull,
  metadata: (c: MergeQueueCommand) => ({ actor: c.meta.actor }),
  projectOf: (s: MergeQueueStateOrNull) => s?.project_id ?? null,
};
