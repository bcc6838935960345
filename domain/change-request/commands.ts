import type { ReviewCommand } from './review.js';
import type { ChangeRequest } from './state.js';
import type { StackNode } from './stack.js';

/**
 * Commands carry everything `decide` needs, so it stays pure: the clock (`now`), the
 * actor and new ids arrive here, as do facts read from git by the caller (branch tips,
 * the merge result).
 */
export interface CommandMeta {
  actor: string;
  now: Date;
  /** The session whose agent acted for `actor` (an agent-grade credential), if any. */
  session_id?: string | null;
}

export interface OpenChangeRequest {
  type: 'OpenChangeRequest';
  /** The new CR's fields; the status, creator and times come from the decider. */
  data: Pick<
    ChangeRequest,
    | 'cr_id' | 'account_id' | 'project_id' | 'number' | 'title' | 'description' | 'base_ref' | 'head_ref'
    | 'head_commit_sha' | 'base_commit_sha' | 'origin_session_id' | 'metadata'
  >;
  /** The project's open CRs, read in the open's transaction: the stack parent is decided on them. */
  stack?: StackNode[];
  meta: CommandMeta;
}

/**
 * A new base for an open CR: a person's (`by` their id; ambiguity or a cycle is a 400) or
 * the server's after the parent merged (`by: 'system'`: a parent that cannot be told is
 * none). `base_commit_sha`: the new base's tip, read by the caller.
 */
export interface RetargetChangeRequest {
  type: 'RetargetChangeRequest';
  data: { base_ref: string; base_commit_sha: string | null; by: 'system' | string; stack: StackNode[] };
  meta: CommandMeta;
}

export interface RefreshChangeRequest {
  type: 'RefreshChangeRequest';
  data: { head_commit_sha: string | null; base_commit_sha: string | null };
  meta: CommandMeta;
}

export interface EditChangeRequest {
  type: 'EditChangeRequest';
  data: { title?: string; description?: string };
  meta: CommandMeta;
}

export interface MergeChangeRequest {
  type: 'MergeChangeRequest';
  data: {
    strategy: 'fast-forward' | 'merge-commit' | 'up-to-date';
    base_commit_sha: string;
    head_commit_sha: string;
    merge_commit_sha: string;
    via?: 'queue';
    check_runs?: string[];
  };
  meta: CommandMeta;
}

export interface CloseChangeRequest {
  type: 'CloseChangeRequest';
  meta: CommandMeta;
}

export interface ReopenChangeRequest {
  type: 'ReopenChangeRequest';
  meta: CommandMeta;
}

export type ChangeRequestCommand =
  | OpenChangeRequest
  | RefreshChangeRequest
  | EditChangeRequest
  | MergeChangeRequest
  | CloseChangeRequest
  | ReopenChangeRequest
  | RetargetChangeRequest
  | ReviewCommand;

/** An event's metadata from its command's: who, and the agent session they acted through. */
export const metadataOf = (meta: CommandMeta): { actor: string; session_id?: string } =>
  meta.session_id ? { actor: meta.actor, session_id: meta.session_id } : { actor: meta.actor };
