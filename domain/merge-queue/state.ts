import type { BuiltEntry, MergeQueueEvent } from './events.js';

export interface MergeQueueState {
  project_id: string;
  base_ref: string;
  /** The base the built chain starts on (null: nothing built since the last rebuild). */
  base_sha: string | null;
  /** Speculative merge results in queue order, each built on the one before it. */
  built: BuiltEntry[];
  /** The compare-and-swap decided on and recorded, not yet known to have landed. */
  landing: { count: number; base_sha: string; merge_sha: string } | null;
  /** Conflicts waiting for the CRs ahead of them to settle. */
  held: { cr_id: string; ahead: string[] }[];
  rebuilds: number;
  landed: number;
  updated_at: string;
}

export type MergeQueueStateOrNull = MergeQueueState | null;

const empty = (project_id: string, base_ref: string, at: string): MergeQueueState => ({
  project_id, base_ref, base_sha: null, built: [], landing: null, held: [], rebuilds: 0, landed: 0, updated_at: at,
});

/** Folds one event (pure, total). */
export function evolve(state: MergeQueueStateOrNull, e: MergeQueueEvent): MergeQueueStateOrNull {
  switch (e.type) {
    case 'MergeQueueEntryBuilt': {
      const s = state ?? empty(e.data.project_id, e.data.base_ref, e.data.built_at);
      const { project_id: _p, base_ref: _b, built_at, ...entry } = e.data;
      return { ...s, base_sha: s.built.length ? s.base_sha : entry.base_sha, built: [...s.built, entry], updated_at: built_at };
    }
    case 'MergeQueueRebuilt': {
      const s = state ?? empty(e.data.project_id, e.data.base_ref, e.data.rebuilt_at);
      const built = s.built.slice(0, e.data.kept);
      return { ...s, built, base_sha: built.length ? s.base_sha : null, landing: null, rebuilds: s.rebuilds + 1, updated_at: e.data.rebuilt_at };
    }
    case 'MergeQueueLanding':
      return state && { ...state, landing: { count: e.data.count, base_sha: e.data.base_sha, merge_sha: e.data.merge_sha }, updated_at: e.data.at };
    case 'MergeQueueLanded': {
      if (!state) return state;
      const built = state.built.slice(e.data.count);
      return { ...state, built, base_sha: built.length ? e.data.merge_sha : null, landing: null, landed: state.landed + e.data.count, updated_at: e.data.landed_at };
    }
    case 'MergeQueueConflictHeld':
      return state && { ...state, held: [...state.held.filter((h) => h.cr_id !== e.data.cr_id), { cr_id: e.data.cr_id, ahead: e.data.ahead }], updated_at: e.data.at };
    case 'MergeQueueConflictReleased':
      return state && { ...state, held: state.held.filter((h) => h.cr_id !== e.data.cr_id), updated_at: e.data.at };
    default: {
      const never: never = e;
      throw new Error(`unhandled event ${(never as { type: string }).type}`);
    }
  }
}

export const fold = (events: MergeQueueEvent[], from: MergeQueueStateOrNull = null): MergeQueueStateOrNull => events.reduce(evolve, from);

/** The commit the built chain ends on (what the next entry is built on), or null when nothing is built. */
export const chainTip = (s: MergeQueueStateOrNull): string | null => (s && s.built.length ? s.built[s.built.length - 1]!.merge_sha : null);
