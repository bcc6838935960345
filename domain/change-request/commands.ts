import type { ReviewCommand } from './review.js';
import type { ChangeRequest } from './state.js';

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
  | ReviewCommand;

/** An event's metadata from its command's: who, and the agent session they acted through. */
export const metadataOf = (meta: CommandMeta): { actor: string; session_id?: string } =>
  meta.session_id ? { actor: meta.actor, session_id: meta.session_id } : { actor: meta.actor };
