import { DomainError, notFound, validationError, type ErrorIssue } from '../errors.js';
import type { ChangeRequestCommand } from './commands.js';
import type { ChangeRequestEvent } from './events.js';
import type { ChangeRequest, CrState } from './state.js';
import { decideReview, isReviewCommand } from './review.js';
import { assertParentOf, parentOf } from './stack.js';

/**
 * The spec's CR state table as a function: given the current state and a command, the
 * events to append, or a typed error. Pure.
 */
export function decide(command: ChangeRequestCommand, state: CrState): ChangeRequestEvent[] {
  if (isReviewCommand(command)) return decideReview(command, state);
  const at = command.meta.now.toISOString();
  const actor = command.meta.actor;
  switch (command.type) {
    case 'OpenChangeRequest': {
      if (state !== null) throw new DomainError('conflict', 'Conflict', 'This change request already exists.');
      const d = command.data;
      assertCanOpen(d);
      const parent = command.stack ? assertParentOf(d, command.stack) : null;
      return [
        {
          type: 'ChangeRequestOpened',
          data: { ...d, title: d.title.trim(), created_by: actor, created_at: at },
        },
        ...(parent ? [{ type: 'ChangeRequestStacked' as const, data: { parent_cr_id: parent, stacked_at: at } }] : []),
      ];
    }
    case 'RefreshChangeRequest': {
      const cr = existing(state);
      // Only open CRs follow their branches; merged and closed ones keep what they recorded.
      if (cr.status !== 'open') return [];
      const { head_commit_sha, base_commit_sha } = command.data;
      if (head_commit_sha === cr.head_commit_sha && base_commit_sha === cr.base_commit_sha) return [];
      return [{ type: 'ChangeRequestRefreshed', data: { head_commit_sha, base_commit_sha, refreshed_at: at } }];
    }
    case 'EditChangeRequest': {
      const cr = existing(state);
      const { title, description } = command.data;
      if (title !== undefined && title.trim() === '') {
        throw validationError('title must not be empty.', [{ path: 'title', message: 'must not be empty' }]);
      }
      const changes = {
        ...(title !== undefined && title.trim() !== cr.title ? { title: title.trim() } : {}),
        ...(description !== undefined && description !== cr.description ? { description } : {}),
      };
      if (Object.keys(changes).length === 0) return [];
      return [{ type: 'ChangeRequestEdited', data: { ...changes, edited_by: actor, edited_at: at } }];
    }
    case 'MergeChangeRequest': {
      const cr = existing(state);
      assertCanMerge(cr);
      return [{ type: 'ChangeRequestMerged', data: { ...command.data, merged_by: actor, merged_at: at } }];
    }
    case 'CloseChangeRequest': {
      const cr = existing(state);
      requireOpen(cr, 'close');
      return [{ type: 'ChangeRequestClosed', data: { closed_by: actor, closed_at: at } }];
    }
    case 'ReopenChangeRequest': {
      const cr = existing(state);
      if (cr.status !== 'closed') {
        throw new DomainError(
          'conflict',
          'Conflict',
          cr.status === 'merged'
            ? `Cannot reopen change request #${cr.number}: it is merged; merged is final.`
            : `Change request #${cr.number} is already open.`,
          { status: cr.status },
        );
      }
      return [{ type: 'ChangeRequestReopened', data: { reopened_by: actor, reopened_at: at } }];
    }
    case 'RetargetChangeRequest': {
      const cr = existing(state);
      if (cr.status !== 'open') {
        throw new DomainError('conflict', 'Conflict', `Cannot retarget change request #${cr.number}: it is ${cr.status}; only an open change request changes its base.`, { status: cr.status });
      }
      const { base_ref, base_commit_sha, by, stack } = command.data;
      assertCanOpen({ title: cr.title, head_ref: cr.head_ref, base_ref });
      const target = { cr_id: cr.cr_id, head_ref: cr.head_ref, base_ref };
      let parent: string | null;
      if (by === 'system') {
        const out = parentOf(target, stack);
        parent = 'parent' in out ? out.parent : null;
      } else {
        parent = assertParentOf(target, stack);
      }
      if (base_ref === cr.base_ref && parent === cr.parent_cr_id) return [];
      return [{ type: 'ChangeRequestRetargeted', data: { from: cr.base_ref, to: base_ref, by, parent_cr_id: parent, base_commit_sha, retargeted_at: at } }];
    }
    default: {
      const unhandled: never = command;
      throw new Error(`unhandled command ${(unhandled as { type: string }).type}`);
    }
  }
}

function existing(state: CrState): ChangeRequest {
  if (state === null) throw notFound('Change request');
  return state;
}

/**
 * Merge and close need an open CR. Repeating the command on a CR already in its target
 * state says so (like gh's "is already closed"); the other refusals name the command and
 * what to do, if anything (a closed CR can be reopened and then merged; a merged one is final).
 */
export function requireOpen(cr: ChangeRequest, verb: 'merge' | 'close'): void {
  if (cr.status === 'open') return;
  const done = verb === 'merge' ? 'merged' : 'closed';
  const message =
    cr.status === done
      ? `Change request #${cr.number} is already ${done}.`
      : cr.status === 'merged'
        ? `Cannot ${verb} change request #${cr.number}: it is merged; merged is final.`
        : `Cannot ${verb} change request #${cr.number}: it is closed; reopen it first.`;
  throw new DomainError('conflict', 'Conflict', message, { status: cr.status });
}

/** Validation of a new CR (400s). Ref-name syntax is checked before this, at the edge. */
export function openIssues(d: { title: string; head_ref: string; base_ref: string }): ErrorIssue[] {
  const issues: ErrorIssue[] = [];
  if (d.title.trim() === '') issues.push({ path: 'title', message: 'title must not be empty.' });
  if (d.head_ref === '') issues.push({ path: 'head_ref', message: 'head_ref is required.' });
  if (d.base_ref === '') issues.push({ path: 'base_ref', message: 'base_ref must not be empty.' });
  if (d.head_ref !== '' && d.head_ref === d.base_ref) {
    issues.push({ path: 'head_ref', message: `head_ref must differ from base_ref (both are '${d.base_ref}').` });
  }
  return issues;
}

/**
 * Whether a CR may be opened with these fields: the decider's own rule, asked before
 * touching git or allocating a number. Throws the 400 the open would.
 */
export function assertCanOpen(d: { title: string; head_ref: string; base_ref: string }): void {
  const issues = openIssues(d);
  if (issues.length) throw validationError(issues.map((i) => i.message).join(' '), issues);
}

/** Whether `cr` may be merged now (the decider's rule for a merge): throws its 409 if not. */
export function assertCanMerge(cr: ChangeRequest): void {
  requireOpen(cr, 'merge');
}

/** `assertCanMerge` as a question. */
export function canMerge(cr: ChangeRequest): boolean {
  return cr.status === 'open';
}
