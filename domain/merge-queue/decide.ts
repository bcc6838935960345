import { DomainError } from '../errors.js';
import type { BuiltEntry, MergeQueueEvent } from './events.js';
import { chainTip, type MergeQueueStateOrNull } from './state.js';

/** Commands carry the clock and the facts read from git, so `decide` stays pure. */
export interface QueueMeta {
  actor: string;
  now: Date;
}

export type MergeQueueCommand =
  | { type: 'BuildEntry'; project_id: string; base_ref: string; entry: BuiltEntry; meta: QueueMeta }
  | { type: 'Rebuild'; project_id: string; base_ref: string; reason: 'base_changed' | 'entry_left'; kept: number; meta: QueueMeta }
  | { type: 'BeginLanding'; count: number; meta: QueueMeta }
  | { type: 'FinishLanding'; meta: QueueMeta }
  | { type: 'HoldConflict'; cr_id: string; ahead: string[]; meta: QueueMeta }
  | { type: 'ReleaseConflict'; cr_id: string; landed: string[]; meta: QueueMeta };

const conflict = (message: string) => new DomainError('conflict', 'Conflict', message);

/**
 * The queue's rules: an entry is built only on the end of the chain (the base itself when
 * nothing is built) and only once; nothing is built or rebuilt under a landing the log
 * has not settled (a rebuild settles it as not landed); a landing names a prefix of the
 * chain, and only the one recorded finishes.
 */
export function decide(c: MergeQueueCommand, s: MergeQueueStateOrNull): MergeQueueEvent[] {
  const at = c.meta.now.toISOString();
  switch (c.type) {
    case 'BuildEntry': {
      if (s?.landing) throw conflict('A landing is in progress: it settles before anything more is built.');
      if (s?.built.some((b) => b.cr_id === c.entry.cr_id)) return [];
      const tip = chainTip(s);
      if (tip !== null && c.entry.base_sha !== tip) throw conflict(`An entry is built on the end of the chain (${tip.slice(0, 12)}), not ${c.entry.base_sha.slice(0, 12)}.`);
      return [{ type: 'MergeQueueEntryBuilt', data: { ...c.entry, project_id: c.project_id, base_ref: c.base_ref, built_at: at } }];
    }
    case 'Rebuild': {
      const kept = Math.min(c.kept, s?.built.length ?? 0);
      if (s && kept === s.built.length && !s.landing && c.reason === 'entry_left') return [];
      return [{ type: 'MergeQueueRebuilt', data: { project_id: c.project_id, base_ref: c.base_ref, reason: c.reason, kept, rebuilt_at: at } }];
    }
    case 'BeginLanding': {
      if (!s || c.count < 1 || c.count > s.built.length || !s.base_sha) throw conflict('Only built entries land.');
      const merge_sha = s.built[c.count - 1]!.merge_sha;
      if (s.landing) {
        if (s.landing.count === c.count && s.landing.merge_sha === merge_sha) return [];
        throw conflict('Another landing is in progress.');
      }
      return [{ type: 'MergeQueueLanding', data: { count: c.count, base_sha: s.base_sha, merge_sha, at } }];
    }
    case 'FinishLanding':
      if (!s?.landing) return [];
      return [{ type: 'MergeQueueLanded', data: { count: s.landing.count, merge_sha: s.landing.merge_sha, landed_at: at } }];
    case 'HoldConflict':
      return [{ type: 'MergeQueueConflictHeld', data: { cr_id: c.cr_id, ahead: c.ahead, at } }];
    case 'ReleaseConflict':
      if (!s?.held.some((h) => h.cr_id === c.cr_id)) return [];
      return [{ type: 'MergeQueueConflictReleased', data: { cr_id: c.cr_id, landed: c.landed, at } }];
    default: {
      const never: never = c;
      throw new Error(`unhandled command ${(never as { type: string }).type}`);
    }
  }
}
