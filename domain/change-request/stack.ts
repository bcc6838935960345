import { validationError } from '../errors.js';
import type { ChangeRequest } from './state.js';

/**
 * Stacked change requests (docs/stacks.md), pure. A CR whose `base_ref` is the head branch
 * of exactly one other open CR of its project is stacked on it: that CR is its parent,
 * recorded when it is opened or when a person retargets it (`ChangeRequestStacked`,
 * `ChangeRequestRetargeted`). Merging follows `base_ref` as always: a child merges into its
 * parent's branch. The service reads the project's open CRs (`StackNode`s) and hands them
 * to the decider, which decides here.
 */
export interface StackNode {
  cr_id: string;
  number: number;
  head_ref: string;
  base_ref: string;
  parent_cr_id: string | null;
}

export type ParentOutcome =
  | { parent: string | null }
  | { problem: 'ambiguous'; message: string; candidates: number[] }
  | { problem: 'cycle'; message: string; through: number[] };

/** The longest chain followed looking for a cycle: stacks are short, a log never is. */
const MAX_WALK = 1000;

/**
 * The parent a CR with these refs would have among `open` (the project's other open CRs):
 * none when no open CR has `base_ref` as its head; a problem when several do (ambiguous)
 * or when following bases from `base_ref` comes back to the CR's own head (a cycle: the
 * CR would merge into a branch that merges into it).
 */
export function parentOf(cr: { cr_id: string; head_ref: string; base_ref: string }, open: StackNode[]): ParentOutcome {
  const others = open.filter((n) => n.cr_id !== cr.cr_id);
  const onBase = others.filter((n) => n.head_ref === cr.base_ref);
  if (onBase.length > 1) {
    const numbers = onBase.map((n) => n.number).sort((a, b) => a - b);
    return {
      problem: 'ambiguous',
      candidates: numbers,
      message: `base_ref '${cr.base_ref}' is the head branch of ${onBase.length} open change requests (${numbers.map((n) => `#${n}`).join(', ')}): a stacked change request needs exactly one parent; close or retarget the others first.`,
    };
  }
  const parent = onBase[0];
  if (!parent) return { parent: null };
  // Follow the bases down from the parent: reaching this CR's head again is a cycle.
  const through: number[] = [];
  let node: StackNode | undefined = parent;
  for (let i = 0; node && i < MAX_WALK; i++) {
    through.push(node.number);
    if (node.base_ref === cr.head_ref) {
      return {
        problem: 'cycle',
        through,
        message: `base_ref '${cr.base_ref}' would make a cycle: ${through.map((n) => `#${n}`).join(' -> ')} merges into '${cr.head_ref}', this change request's own head.`,
      };
    }
    const base: string = node.base_ref;
    const next = others.filter((n) => n.head_ref === base);
    node = next.length === 1 ? next[0] : undefined;
  }
  return { parent: parent.cr_id };
}

/** `parentOf` as a person's request: ambiguity or a cycle is their 400. */
export function assertParentOf(cr: { cr_id: string; head_ref: string; base_ref: string }, open: StackNode[]): string | null {
  const out = parentOf(cr, open);
  if ('parent' in out) return out.parent;
  throw validationError(out.message, [{ path: 'base_ref', message: out.problem === 'ambiguous' ? 'ambiguous stack parent' : 'stack cycle' }]);
}

/**
 * Where a CR stands in its stack, for people: its parent was closed without merging (it
 * waits for a person: retarget it, or reopen the parent), or nothing to say.
 */
export function stackNote(cr: ChangeRequest, parent: ChangeRequest | null): string | null {
  if (cr.status !== 'open' || !parent) return null;
  if (parent.status === 'closed') {
    return `Its parent #${parent.number} was closed without merging: this change request waits for a person to retarget it (a new base) or reopen #${parent.number}.`;
  }
  if (parent.status === 'merged' && cr.base_ref === parent.head_ref) {
    return `Its parent #${parent.number} is merged; it is retargeted onto '${parent.base_ref}' next.`;
  }
  return null;
}

/**
 * The chain of `cr`: its ancestors root first, then `cr`, then its descendants breadth
 * first, each once. `byId` and `childrenOf` answer from what the service read.
 */
export function stackChain(
  cr: ChangeRequest,
  byId: (id: string) => ChangeRequest | undefined,
  childrenOf: (id: string) => ChangeRequest[],
): ChangeRequest[] {
  const seen = new Set<string>([cr.cr_id]);
  const up: ChangeRequest[] = [];
  for (let p = cr.parent_cr_id ? byId(cr.parent_cr_id) : undefined; p && !seen.has(p.cr_id); p = p.parent_cr_id ? byId(p.parent_cr_id) : undefined) {
    seen.add(p.cr_id);
    up.unshift(p);
  }
  const down: ChangeRequest[] = [];
  const queue = [cr];
  while (queue.length) {
    for (const c of childrenOf(queue.shift()!.cr_id)) {
      if (seen.has(c.cr_id)) continue;
      seen.add(c.cr_id);
      down.push(c);
      queue.push(c);
    }
  }
  return [...up, cr, ...down];
}
