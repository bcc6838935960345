import type { ChangeRequestEvent } from './events.js';
import type { CrState } from './state.js';
import { isReviewEvent } from './review.js';

/** Folds one event into the state. Pure; total over the event union. */
export function evolve(state: CrState, event: ChangeRequestEvent): CrState {
  if (event.type === 'ChangeRequestOpened') {
    const d = event.data;
    return {
      ...d,
      status: 'open',
      merged_at: null,
      merged_by: null,
      merge_commit_sha: null,
      closed_at: null,
      closed_by: null,
      updated_at: d.created_at,
      parent_cr_id: null,
    };
  }
  if (state === null) return null; // events before Opened cannot exist; ignore defensively
  if (isReviewEvent(event)) return state; // review lives in its own tables (projections/review.ts), not on the CR row
  switch (event.type) {
    case 'ChangeRequestRefreshed':
      return {
        ...state,
        head_commit_sha: event.data.head_commit_sha,
        base_commit_sha: event.data.base_commit_sha,
        updated_at: event.data.refreshed_at,
      };
    case 'ChangeRequestEdited':
      return {
        ...state,
        ...(event.data.title !== undefined ? { title: event.data.title } : {}),
        ...(event.data.description !== undefined ? { description: event.data.description } : {}),
        updated_at: event.data.edited_at,
      };
    case 'ChangeRequestMerged':
      return {
        ...state,
        status: 'merged',
        merged_at: event.data.merged_at,
        merged_by: event.data.merged_by,
        merge_commit_sha: event.data.merge_commit_sha,
        base_commit_sha: event.data.base_commit_sha,
        head_commit_sha: event.data.head_commit_sha,
        updated_at: event.data.merged_at,
      };
    case 'ChangeRequestClosed':
      return { ...state, status: 'closed', closed_at: event.data.closed_at, closed_by: event.data.closed_by, updated_at: event.data.closed_at };
    case 'ChangeRequestReopened':
      return { ...state, status: 'open', closed_at: null, closed_by: null, updated_at: event.data.reopened_at };
    case 'ChangeRequestStacked':
      return { ...state, parent_cr_id: event.data.parent_cr_id };
    case 'ChangeRequestRetargeted':
      return {
        ...state,
        base_ref: event.data.to,
        base_commit_sha: event.data.base_commit_sha,
        parent_cr_id: event.data.parent_cr_id,
        updated_at: event.data.retargeted_at,
      };
    case 'CheckQueued':
    case 'CheckStarted':
    case 'CheckPassed':
    case 'CheckFailed':
    case 'CheckErrored':
    case 'CheckCancelled':
    case 'ChangeRequestAutoMergeRequested':
    case 'ChangeRequestAutoMergeCancelled':
    case 'ChangeRequestQueued':
    case 'ChangeRequestDequeued':
      // Checks and the merge queue live beside the CR (domain/change-request/checks.ts): its JSON stays the spec's.
      return state;
    default: {
      const unhandled: never = event;
      throw new Error(`unhandled event ${(unhandled as { type: string }).type}`);
    }
  }
}

export const fold = (events: ChangeRequestEvent[], from: CrState = null): CrState => events.reduce(evolve, from);
